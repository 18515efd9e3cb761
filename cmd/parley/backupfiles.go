package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"parley/files"
	"parley/sqlite"
)

// The blobs of a backup (docs/files.md, "Backups"): parley backup DEST of
// a node that keeps its files in the directory under --data writes them
// into the directory DEST.files beside the snapshot, every blob a row of
// the snapshot refers to and no other, each checked against its row's
// size and SHA-256; parley restore SRC checks SRC.files the same way
// before it changes anything, then puts the blobs back. A node that keeps
// its files in S3 (--files-s3-endpoint) backs up their rows only: the
// blobs stay in the bucket, which the operator backs up (or versions) as
// the bucket's own.

// backupFilesDir is where the blobs of the backup at dest go.
func backupFilesDir(dest string) string { return dest + ".files" }

// blobRefs are the blobs the files of the database at path refer to: each
// file's bytes (with its size and hash) and its preview; their count and
// bytes.
func blobRefs(ctx context.Context, path string) (refs []files.Ref, n, size int64, err error) {
	err = sqlite.SnapshotFiles(ctx, path, func(f sqlite.FileRef) error {
		refs = append(refs, files.Ref{Key: f.ID, Size: f.Size, SHA256: f.SHA256})
		if f.Preview {
			refs = append(refs, files.Ref{Key: files.PreviewKey(f.ID)})
		}
		n++
		size += f.Size
		return nil
	})
	return refs, n, size, err
}

// stageBlobs links every blob of the data directory's files into a new
// directory beside dest, before the snapshot: a blob that a row of the
// snapshot refers to and that is deleted while it is taken is kept so.
// keepBlobs finishes the directory after the snapshot.
func stageBlobs(data, dest string) (string, error) {
	if _, err := os.Lstat(backupFilesDir(dest)); err == nil {
		return "", fmt.Errorf("backup: %s exists: choose a new DEST (its files go to DEST.files)", backupFilesDir(dest))
	}
	stage, err := os.MkdirTemp(filepath.Dir(dest), ".parley-backup-files-*")
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	if err := files.LinkAll(filepath.Join(data, "files"), stage); err != nil {
		os.RemoveAll(stage)
		return "", fmt.Errorf("backup: files: %w", err)
	}
	return stage, nil
}

// keepBlobs makes stage hold exactly the blobs the snapshot at dest
// refers to, each checked, and renames it to DEST.files (no directory
// when the snapshot has no files). It fails, naming the file, when one
// of them is gone from the data directory too (deleted after the
// snapshot, before stageBlobs saw it: a new backup will not miss it).
func keepBlobs(ctx context.Context, data, dest, stage string) (n, size int64, err error) {
	refs, n, size, err := blobRefs(ctx, dest)
	if err != nil {
		return 0, 0, fmt.Errorf("backup: %w", err)
	}
	keep := map[string]bool{}
	for _, r := range refs {
		err := files.Link(filepath.Join(data, "files"), stage, r.Key)
		if errors.Is(err, files.ErrNotExist) {
			return 0, 0, fmt.Errorf("backup: the blob %s of a file in the snapshot is missing from %s (deleted while the backup ran, or lost before): run parley backup again", r.Key, filepath.Join(data, "files"))
		}
		if err != nil {
			return 0, 0, fmt.Errorf("backup: %w", err)
		}
		if err := files.Check(stage, r); err != nil {
			return 0, 0, fmt.Errorf("backup: %w", err)
		}
		keep[r.Key] = true
	}
	if err := files.Prune(stage, keep); err != nil {
		return 0, 0, fmt.Errorf("backup: %w", err)
	}
	if n == 0 {
		return 0, 0, os.Remove(stage)
	}
	if err := os.Rename(stage, backupFilesDir(dest)); err != nil {
		return 0, 0, fmt.Errorf("backup: %w", err)
	}
	return n, size, files.SyncDir(filepath.Dir(dest))
}

// restoreBlobs checks that SRC.files holds every blob the snapshot src
// refers to, whole, and only then links them into the data directory's
// files, replacing one there that is damaged (or not a plain file) and
// keeping one there whole; undo removes those it added (when the
// database's restore fails after), and report says what it restored. A
// snapshot without files needs no SRC.files. An error from reading src
// is left to sqlite.Restore, whose Inspect says what is wrong with the
// file.
func restoreBlobs(ctx context.Context, src, data string) (undo func(), report string, err error) {
	undo = func() {}
	refs, n, size, err := blobRefs(ctx, src)
	if err != nil || n == 0 {
		return undo, "", nil
	}
	from := backupFilesDir(src)
	for _, r := range refs {
		if err := files.Check(from, r); err != nil {
			return undo, "", fmt.Errorf("restore %s: its files are not whole (%w): nothing was restored; restore a whole backup (DEST and DEST.files from parley backup), or, for a node that kept its files in S3, pass --files-s3-endpoint", src, err)
		}
	}
	to := filepath.Join(data, "files")
	var added []string
	undo = func() {
		for _, k := range added {
			os.Remove(filepath.Join(to, k))
		}
	}
	replaced := 0
	for _, r := range refs {
		if _, err := os.Lstat(filepath.Join(to, r.Key)); err == nil {
			if files.Check(to, r) == nil {
				continue
			}
			// Damaged, or not a plain file: the backup's copy replaces
			// it (a key's bytes never change, so it is the right one
			// for the database restored or the one there now).
			if err := os.Remove(filepath.Join(to, r.Key)); err != nil {
				undo()
				return func() {}, "", fmt.Errorf("restore %s: files: replace the damaged blob: %w", src, err)
			}
			replaced++
		} else {
			added = append(added, r.Key)
		}
		if err := files.Link(from, to, r.Key); err != nil {
			undo()
			return func() {}, "", fmt.Errorf("restore %s: files: %w", src, err)
		}
	}
	if err := files.SyncDir(to); err != nil {
		undo()
		return func() {}, "", fmt.Errorf("restore %s: files: %w", src, err)
	}
	report = fmt.Sprintf("restored %d files (%d bytes) from %s into %s\n", n, size, from, to)
	if replaced > 0 {
		report += fmt.Sprintf("replaced %d damaged blobs in %s (not whole, or not plain files) with the backup's copies\n", replaced, to)
	}
	return undo, report, nil
}
