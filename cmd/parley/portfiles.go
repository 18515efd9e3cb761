package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"parley/files"
)

// The blobs of a port (docs/operations.md, "Files"): the files' rows go
// with the other tables (package port); their bytes, in the files
// directory of the source's data directory, go to the cluster's object
// store (--files-s3-*) after the rows. A blob the store holds already,
// whole, is left: a port run again (resumed, or over a finished one)
// copies only what is missing. Each blob is read whole (at most the
// largest upload, --files-max-size), checked against its row's size and
// SHA-256 on both sides: a damaged source fails the port, naming it.

// blobCopy is what portBlobs did.
type blobCopy struct {
	Files, Bytes   int64 // the source's files and their bytes
	Copied, Had    int   // blobs copied, and found whole in the target
	PreviewsCopied int
}

// portBlobs copies the blobs of the files of the database at dbPath from
// the directory store srcDir into dst.
func portBlobs(ctx context.Context, dbPath, srcDir string, dst files.Blobs) (blobCopy, error) {
	var bc blobCopy
	refs, n, size, err := blobRefs(ctx, dbPath)
	if err != nil {
		return bc, fmt.Errorf("port: files: %w", err)
	}
	bc.Files, bc.Bytes = n, size
	for _, r := range refs {
		if ok, err := holds(ctx, dst, r); err != nil {
			return bc, fmt.Errorf("port: files: target: %w", err)
		} else if ok {
			bc.Had++
			continue
		}
		data, err := os.ReadFile(filepath.Join(srcDir, r.Key))
		if errors.Is(err, os.ErrNotExist) {
			return bc, fmt.Errorf("port: files: the blob %s of a file is missing from %s: the source's files are not whole (its rows are ported; restore the blob and run parley port again)", r.Key, srcDir)
		}
		if err != nil {
			return bc, fmt.Errorf("port: files: %w", err)
		}
		if !matches(r, data) {
			return bc, fmt.Errorf("port: files: the blob %s in %s is %d bytes of SHA-256 %x, its row records %d bytes of %x: the source's copy is damaged", r.Key, srcDir, len(data), sha256.Sum256(data), r.Size, r.SHA256)
		}
		if err := dst.Put(ctx, r.Key, data); err != nil {
			return bc, fmt.Errorf("port: files: target: %w", err)
		}
		if ok, err := holds(ctx, dst, r); err != nil || !ok {
			return bc, fmt.Errorf("port: files: target: the blob %s does not read back as written (%v)", r.Key, err)
		}
		if r.SHA256 == nil {
			bc.PreviewsCopied++
		} else {
			bc.Copied++
		}
	}
	return bc, nil
}

// holds reports whether dst holds r whole.
func holds(ctx context.Context, dst files.Blobs, r files.Ref) (bool, error) {
	rc, err := dst.Get(ctx, r.Key)
	if errors.Is(err, files.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return false, err
	}
	return matches(r, data), nil
}

// matches reports whether data is r's blob: of its size and hash (a
// preview: any).
func matches(r files.Ref, data []byte) bool {
	if r.SHA256 == nil {
		return len(data) > 0
	}
	sum := sha256.Sum256(data)
	return int64(len(data)) == r.Size && bytes.Equal(sum[:], r.SHA256)
}

// verifyBlobs checks that dst holds every blob of the files of the
// database at dbPath, whole (parley port --verify-only).
func verifyBlobs(ctx context.Context, dbPath string, dst files.Blobs, stdout io.Writer) error {
	refs, n, _, err := blobRefs(ctx, dbPath)
	if err != nil {
		return fmt.Errorf("port: files: %w", err)
	}
	var missing []string
	for _, r := range refs {
		ok, err := holds(ctx, dst, r)
		if err != nil {
			return fmt.Errorf("port: files: target: %w", err)
		}
		if !ok {
			missing = append(missing, r.Key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("port: files: %d of the blobs of %d files are missing from the target or differ (%v): run parley port again", len(missing), n, missing[:min(len(missing), 10)])
	}
	fmt.Fprintf(stdout, "files: the blobs of all %d files are in the target, each checked by size and SHA-256\n", n)
	return nil
}
