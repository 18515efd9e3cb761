package files_test

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"parley/files"
)

// TestCheckRefusesNonRegular: a backup's or an export's directory of
// blobs is outside input to restore and import, and Check is all that
// stands between it and the store. A blob there that is a symlink, to
// whatever file of the server (a preview has no hash to give it away), or
// that is a directory, is refused by name, as a missing or damaged one
// is, and Link then puts nothing in the store; a plain file with the
// right bytes passes, and a "../" key never reaches the file system.
func TestCheckRefusesNonRegular(t *testing.T) {
	src, dst, outside := t.TempDir(), t.TempDir(), t.TempDir()
	data := []byte("the bytes of a file")
	sum := sha256.Sum256(data)
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "plain"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"linked", "linked.p"} {
		if err := os.Symlink(secret, filepath.Join(src, k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(src, "adir.p"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := files.Check(src, files.Ref{Key: "plain", Size: int64(len(data)), SHA256: sum[:]}); err != nil {
		t.Errorf("Check(a plain blob of the right bytes): %v", err)
	}
	for _, r := range []files.Ref{
		{Key: "linked", Size: int64(len(data)), SHA256: sum[:]},
		{Key: "linked.p"},
		{Key: "adir.p"},
	} {
		err := files.Check(src, r)
		if err == nil || !strings.Contains(err.Error(), r.Key) {
			t.Errorf("Check(%s, not a regular file) = %v, want an error naming it", r.Key, err)
		}
	}
	for _, k := range []string{"../secret", "/etc/passwd", "a/../../b"} {
		if err := files.Check(src, files.Ref{Key: k}); err == nil {
			t.Errorf("Check(%q) passed, want a refused key", k)
		}
		if err := files.Link(src, dst, k); err == nil {
			t.Errorf("Link(%q) passed, want a refused key", k)
		}
	}
}
