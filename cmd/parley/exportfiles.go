package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"parley/bulk"
	"parley/files"
)

// The bytes of the files of an export (docs/export-format.md, "Files"):
// parley export --files-dir DIR writes each file's blob, and its
// preview's, into DIR, named by the blob key, streamed and checked
// against the record's size and SHA-256; parley import --files-dir DIR
// checks every file record's blob in DIR before it writes anything, and
// after the records puts the blobs into the target's file store. Without
// --files-dir an export carries the files' rows alone.

// blobStore is where the files of the store live: the directory under
// --data for SQLite, the bucket of --files-s3-endpoint for PostgreSQL
// (required there, as in cluster mode).
func blobStore(ctx context.Context, store, data string, fc *filesConfig, op string) (files.Blobs, error) {
	if fc.S3Endpoint != "" {
		return fc.openS3(ctx)
	}
	if isPostgres(store) {
		return nil, fmt.Errorf("%s: --files-dir with PostgreSQL: the files are in the cluster's object store: give its --files-s3-endpoint, --files-s3-bucket and keys", op)
	}
	return files.OpenDir(filepath.Join(data, "files"))
}

// exportBlob copies the blobs of f from src into dir: the bytes, streamed
// and checked, and the preview when f has one.
func exportBlob(ctx context.Context, src files.Blobs, dir string, f *bulk.File) error {
	sum, n, err := copyBlob(ctx, src, dir, f.ID)
	if err != nil {
		return fmt.Errorf("export: file %s: %w", f.ID, err)
	}
	if n != f.Size || string(sum) != string(f.SHA256) {
		return fmt.Errorf("export: file %s: its blob is %d bytes of SHA-256 %x, its row records %d bytes of %x: the store's copy is damaged", f.ID, n, sum, f.Size, f.SHA256)
	}
	if f.Preview {
		if _, _, err := copyBlob(ctx, src, dir, files.PreviewKey(f.ID)); err != nil {
			return fmt.Errorf("export: the preview of file %s: %w", f.ID, err)
		}
	}
	return nil
}

// copyBlob streams the blob key of src into dir (a temporary file renamed
// into place) and returns its SHA-256 and size.
func copyBlob(ctx context.Context, src files.Blobs, dir, key string) ([]byte, int64, error) {
	rc, err := src.Get(ctx, key)
	if errors.Is(err, files.ErrNotExist) {
		return nil, 0, fmt.Errorf("its blob %s is missing from the file store (deleted since the snapshot? export again)", key)
	}
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(dir, ".blob-*")
	if err != nil {
		return nil, 0, err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), rc)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, key))
	}
	return h.Sum(nil), n, err
}

// fileRefs reads the file records of the export f (checked already) and
// returns the blobs they need.
func fileRefs(f io.ReadSeeker) ([]files.Ref, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	rd, err := bulk.NewReader(f)
	if err != nil {
		return nil, err
	}
	var refs []files.Ref
	for {
		r, err := rd.Next()
		if err == io.EOF {
			return refs, nil
		}
		if err != nil {
			return nil, err
		}
		if x := r.File; x != nil {
			refs = append(refs, files.Ref{Key: x.ID, Size: x.Size, SHA256: x.SHA256})
			if x.Preview {
				refs = append(refs, files.Ref{Key: files.PreviewKey(x.ID)})
			}
		}
	}
}

// checkImportBlobs checks that dir holds every blob of refs whole.
func checkImportBlobs(dir string, refs []files.Ref) error {
	for _, r := range refs {
		if err := files.Check(dir, r); err != nil {
			return fmt.Errorf("--files-dir: %w: nothing was imported; give the directory parley export --files-dir wrote with this file", err)
		}
	}
	return nil
}

// importBlobs puts the blobs of refs from dir into dst, skipping those it
// holds already; each is read whole (at most the largest upload).
func importBlobs(ctx context.Context, dir string, refs []files.Ref, dst files.Blobs) (int, error) {
	n := 0
	for _, r := range refs {
		if ok, err := holds(ctx, dst, r); err != nil {
			return n, err
		} else if ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, r.Key))
		if err != nil {
			return n, err
		}
		if !matches(r, data) {
			return n, fmt.Errorf("the blob %s in %s changed since it was checked", r.Key, dir)
		}
		if err := dst.Put(ctx, r.Key, data); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
