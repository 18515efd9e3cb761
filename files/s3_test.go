package files_test

import (
	"context"
	"testing"

	"parley/files"
	"parley/servicetest"
)

// TestS3 runs the Blobs suite against a real S3-compatible server: a
// private versitygw with its posix back-end.
func TestS3(t *testing.T) {
	g := servicetest.StartVersityGW(t)
	s, err := files.OpenS3(context.Background(), files.S3Config{
		Endpoint: g.Endpoint, Bucket: "parley-test", AccessKey: g.AccessKey, SecretKey: g.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	RunBlobsTests(t, s)
	// A second open finds the bucket made.
	if _, err := files.OpenS3(context.Background(), files.S3Config{
		Endpoint: g.Endpoint, Bucket: "parley-test", AccessKey: g.AccessKey, SecretKey: g.SecretKey,
	}); err != nil {
		t.Errorf("second OpenS3: %v", err)
	}
	if _, err := files.OpenS3(context.Background(), files.S3Config{
		Endpoint: g.Endpoint, Bucket: "parley-test", AccessKey: g.AccessKey, SecretKey: "wrong",
	}); err == nil {
		t.Error("OpenS3 with a wrong secret: no error")
	}
}
