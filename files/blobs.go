package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Blobs stores opaque blobs by key. Keys are made by the server (a file's
// id, with a suffix for its preview), never taken from user input.
type Blobs interface {
	// Put stores the blob of key whole or not at all.
	Put(ctx context.Context, key string, data []byte) error
	// Get opens the blob of key; ErrNotExist if there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the blob of key; a missing one is no error.
	Delete(ctx context.Context, key string) error
	// List calls f with every key stored.
	List(ctx context.Context, f func(key string) error) error
}

// ErrNotExist is Get's error for a key with no blob.
var ErrNotExist = errors.New("blob does not exist")

// keyPattern is what a key is made of: base32 ids, a dot suffix.
var keyPattern = regexp.MustCompile(`^[a-z0-9]{1,64}(\.[a-z]{1,8})?$`)

func checkKey(key string) error {
	if !keyPattern.MatchString(key) {
		return fmt.Errorf("blob key %q: not a key the server makes", key)
	}
	return nil
}

// Dir keeps blobs as files of a directory: each is written to a
// temporary file, fsynced, then renamed into place, so that a blob is
// either whole or absent after a crash.
type Dir struct {
	dir string
}

var _ Blobs = (*Dir)(nil)

// OpenDir returns the Dir of dir, which Put makes on the first blob
// (a data directory with no files has none).
func OpenDir(dir string) (*Dir, error) {
	if dir == "" {
		return nil, fmt.Errorf("files: no directory")
	}
	return &Dir{dir: dir}, nil
}

// Put implements Blobs.
func (d *Dir) Put(_ context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.MkdirAll(d.dir, 0o750); err != nil {
		return fmt.Errorf("put blob: %w", err)
	}
	tmp, err := os.CreateTemp(d.dir, ".put-*")
	if err != nil {
		return fmt.Errorf("put blob: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("put blob: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("put blob: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("put blob: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.dir, key)); err != nil {
		return fmt.Errorf("put blob: %w", err)
	}
	return syncDir(d.dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync blob directory: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync blob directory: %w", err)
	}
	return nil
}

// Get implements Blobs.
func (d *Dir) Get(_ context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(d.dir, key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotExist
	}
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	return f, nil
}

// Delete implements Blobs.
func (d *Dir) Delete(_ context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(d.dir, key))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete blob: %w", err)
	}
	return nil
}

// List implements Blobs; leftover temporary files are not listed.
func (d *Dir) List(_ context.Context, f func(key string) error) error {
	ents, err := os.ReadDir(d.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no blob yet
	}
	if err != nil {
		return fmt.Errorf("list blobs: %w", err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			if err := f(e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}
