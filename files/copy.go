package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Copies of a directory store's blobs, for parley backup and restore
// (docs/files.md, "Backups"): a blob never changes once written (its key
// is a new file's id), so a hard link is a copy, and one is taken when
// the two directories share a file system; otherwise the bytes are
// copied, through a temporary file renamed into place.

// Ref is a blob a row of the database refers to: a file's bytes, whose
// Size and SHA256 the row records, or its preview (SHA256 nil: only its
// presence is checked).
type Ref struct {
	Key    string
	Size   int64
	SHA256 []byte
}

// PreviewKey is the blob key of the preview of file id.
func PreviewKey(id string) string { return id + ".p" }

// LinkAll puts every blob of the directory store src into dst (made when
// missing), as Link does: the blobs as they are now, before a snapshot of
// the rows, so that one deleted meanwhile is still in dst.
func LinkAll(src, dst string) error {
	d := &Dir{dir: src}
	return d.List(context.Background(), func(key string) error { return Link(src, dst, key) })
}

// Link puts the blob key of src into dst, a hard link when it can, else
// a copy; a blob dst has already is left. ErrNotExist when src has none.
func Link(src, dst, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	to := filepath.Join(dst, key)
	if _, err := os.Lstat(to); err == nil {
		return nil
	}
	if err := os.MkdirAll(dst, 0o750); err != nil {
		return fmt.Errorf("copy blob: %w", err)
	}
	from := filepath.Join(src, key)
	err := os.Link(from, to)
	if errors.Is(err, os.ErrNotExist) {
		return ErrNotExist
	}
	if err == nil || errors.Is(err, os.ErrExist) {
		return nil
	}
	// Another file system, or one without hard links: copy.
	f, err := os.Open(from)
	if errors.Is(err, os.ErrNotExist) {
		return ErrNotExist
	}
	if err != nil {
		return fmt.Errorf("copy blob: %w", err)
	}
	defer f.Close()
	tmp, err := os.CreateTemp(dst, ".copy-*")
	if err != nil {
		return fmt.Errorf("copy blob: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	_, err = io.Copy(tmp, f)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), to)
	}
	if err != nil {
		return fmt.Errorf("copy blob: %w", err)
	}
	return nil
}

// Check verifies that the directory store dir holds r whole: present, a
// plain file (not a symbolic link, which restore or import would carry
// into the store pointing anywhere, nor a directory), and for a file's
// bytes of r's size and hash. It reads the blob through, a buffer at a
// time.
func Check(dir string, r Ref) error {
	if err := checkKey(r.Key); err != nil {
		return err
	}
	path := filepath.Join(dir, r.Key)
	li, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blob %s: missing from %s", r.Key, dir)
	}
	if err != nil {
		return fmt.Errorf("blob %s: %w", r.Key, err)
	}
	if !li.Mode().IsRegular() {
		what := "special file"
		switch {
		case li.Mode()&os.ModeSymlink != 0:
			what = "symbolic link"
		case li.IsDir():
			what = "directory"
		}
		return fmt.Errorf("blob %s in %s: a %s, not a plain file: copy the blobs as plain files (cp -rL, or the directory parley wrote as it is)", r.Key, dir, what)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("blob %s: %w", r.Key, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(li, fi) {
		return fmt.Errorf("blob %s in %s: replaced while it was checked: check again", r.Key, dir)
	}
	if r.SHA256 == nil {
		return nil
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("blob %s: %w", r.Key, err)
	}
	if n != r.Size || !bytes.Equal(h.Sum(nil), r.SHA256) {
		return fmt.Errorf("blob %s in %s: %d bytes of SHA-256 %x, but its row records %d bytes of %x: the copy is damaged", r.Key, dir, n, h.Sum(nil), r.Size, r.SHA256)
	}
	return nil
}

// Prune removes from the directory store dir every blob whose key keep
// does not hold (the blobs LinkAll took that the snapshot's rows do not
// refer to), and any leftover temporary file.
func Prune(dir string, keep map[string]bool) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune blobs: %w", err)
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("prune blobs: %w", err)
			}
		}
	}
	return syncDir(dir)
}

// SyncDir makes the entries of the directory dir durable.
func SyncDir(dir string) error { return syncDir(dir) }
