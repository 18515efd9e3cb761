package files

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config configures an S3 store.
type S3Config struct {
	// Endpoint is the store's URL, http(s)://host:port (required).
	Endpoint string
	// Bucket holds the blobs; OpenS3 makes it when missing (required).
	Bucket string
	// AccessKey and SecretKey sign the requests.
	AccessKey, SecretKey string
	// Region of the bucket. Default "us-east-1".
	Region string
}

// S3 keeps blobs as the objects of a bucket of an S3-compatible store
// (AWS S3, MinIO, versitygw, Ceph, ...), through minio-go. A PUT of an
// object is atomic: it is whole or absent.
type S3 struct {
	c      *minio.Client
	bucket string
}

var _ Blobs = (*S3)(nil)

// OpenS3 connects to the store and makes the bucket when missing.
func OpenS3(ctx context.Context, cfg S3Config) (*S3, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("s3 endpoint %q: want http(s)://host:port", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, fmt.Errorf("s3: no bucket")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       u.Scheme == "https",
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3: bucket %s: %w", cfg.Bucket, err)
	}
	if !ok {
		if err := c.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			// Another node may have made it meanwhile.
			if ok, err2 := c.BucketExists(ctx, cfg.Bucket); err2 != nil || !ok {
				return nil, fmt.Errorf("s3: make bucket %s: %w", cfg.Bucket, err)
			}
		}
	}
	return &S3{c: c, bucket: cfg.Bucket}, nil
}

// Put implements Blobs.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	_, err := s.c.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return fmt.Errorf("put blob: %w", err)
	}
	return nil
}

// Get implements Blobs.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	// GetObject does not ask until the first read: Stat says whether the
	// object is there.
	if _, err := s.c.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, ErrNotExist
		}
		return nil, fmt.Errorf("get blob: %w", err)
	}
	o, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	return o, nil
}

// Delete implements Blobs.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil
		}
		return fmt.Errorf("delete blob: %w", err)
	}
	return nil
}

// List implements Blobs.
func (s *S3) List(ctx context.Context, f func(key string) error) error {
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{}) {
		if o.Err != nil {
			return fmt.Errorf("list blobs: %w", o.Err)
		}
		if err := f(o.Key); err != nil {
			return err
		}
	}
	return nil
}
