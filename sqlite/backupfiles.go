package sqlite

import (
	"context"
	"fmt"
)

// FileRef is a row of the files table as a backup needs it: the blobs it
// refers to (the bytes, of Size and SHA256, and the preview when Preview).
type FileRef struct {
	ID      string
	Size    int64
	SHA256  []byte
	Preview bool
}

// SnapshotFiles calls each with every row of the files table of the
// database file at path (a snapshot of Backup, or one to restore), in id
// order, reading it on a read-only connection; a database of a schema
// before files has none.
func SnapshotFiles(ctx context.Context, path string, each func(FileRef) error) error {
	db := openReadOnly(path)
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'files'`).Scan(&n); err != nil {
		return fmt.Errorf("%s: files: %w", path, err)
	}
	if n == 0 {
		return nil
	}
	rows, err := db.QueryContext(ctx, `SELECT id, size, sha256, preview FROM files ORDER BY id`)
	if err != nil {
		return fmt.Errorf("%s: files: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var f FileRef
		if err := rows.Scan(&f.ID, &f.Size, &f.SHA256, &f.Preview); err != nil {
			return fmt.Errorf("%s: files: %w", path, err)
		}
		if err := each(f); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: files: %w", path, err)
	}
	return nil
}
