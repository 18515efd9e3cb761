package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"parley"
)

// Files and attachments (migration 0010, docs/files.md): the files table
// and the queries of chat.FileStore. None is on a hot path, so they are
// plain statements, not prepared ones; every write runs in the writer's
// transaction, one at a time, which is what makes the quota check of
// CreateFile exact under any concurrency.

const fileCols = `id, room_id, uploader, name, type, size, sha256, preview, created_at, coalesce(seq, 0), coalesce(claim, '')`

func scanFile(s scanner) (parley.StoredFile, error) {
	var f parley.StoredFile
	var created int64
	if err := s.Scan(&f.ID, &f.RoomID, &f.Uploader, &f.Name, &f.Type, &f.Size, &f.SHA256, &f.Preview, &created, &f.Seq, &f.Claim); err != nil {
		return f, err
	}
	f.CreatedAt = fromMicro(created)
	return f, nil
}

func collectFiles(rows *sql.Rows, err error) ([]parley.StoredFile, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var fs []parley.StoredFile
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return fs, rows.Err()
}

// CreateFile stores f when its uploader's files, f included, total at
// most quota bytes; CodeTooLarge otherwise (the quota is checked in the
// INSERT itself, in the one writer's transaction). The total is
// total(size), a float, not sum(size), which fails with "integer
// overflow" past an int64 (rows an import wrote before it bounded file
// sizes): such a user is over any quota. It is exact below 2^53 bytes
// (8 PiB).
func (s *Store) CreateFile(ctx context.Context, f parley.StoredFile, quota int64) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		if f.CreatedAt.IsZero() {
			f.CreatedAt = fromMicro(w.now())
		}
		res, err := w.tx.Exec(`INSERT INTO files (id, room_id, uploader, name, type, size, sha256, preview, created_at)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
			WHERE (SELECT total(size) FROM files WHERE uploader = ?3) + ?6 <= ?10`,
			f.ID, f.RoomID, f.Uploader, f.Name, f.Type, f.Size, f.SHA256, f.Preview, f.CreatedAt.UnixMicro(), quota)
		if err != nil {
			return result{}, fmt.Errorf("create file: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return result{}, errOverQuota(quota)
		}
		return result{}, nil
	})
	return err
}

func errOverQuota(quota int64) error {
	return parley.Errorf(parley.CodeTooLarge, "over your file quota of %d bytes: delete messages with files to make room", quota)
}

// File returns the file of id; CodeNotFound for an unknown id.
func (s *Store) File(ctx context.Context, id string) (parley.StoredFile, error) {
	f, err := scanFile(s.rdb.QueryRowContext(ctx, `SELECT `+fileCols+` FROM files WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return f, parley.Errorf(parley.CodeNotFound, "file not found")
	}
	if err != nil {
		return f, s.readErr("file", err)
	}
	return f, nil
}

// ClaimFiles claims for a send, under claim, the files of ids that
// uploader uploaded into roomID and that no message carries (nor another
// send claims), or that claim claimed already (a resend), and returns
// those it claimed; the caller checks it got them all (and else calls
// ReleaseFiles).
func (s *Store) ClaimFiles(ctx context.Context, roomID, uploader, claim string, ids []string) ([]parley.StoredFile, error) {
	var fs []parley.StoredFile
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		args := []any{roomID, uploader, claim}
		for _, id := range ids {
			args = append(args, id)
		}
		var err error
		fs, err = collectFiles(w.tx.Query(`UPDATE files SET claim = ?3
			WHERE room_id = ?1 AND uploader = ?2 AND id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)
				AND (claim = ?3 OR (claim IS NULL AND seq IS NULL))
			RETURNING `+fileCols, args...))
		if err != nil {
			return result{}, fmt.Errorf("claim files: %w", err)
		}
		return result{}, nil
	})
	return fs, err
}

// ReleaseFiles lets go of the unattached files claimed under claim.
func (s *Store) ReleaseFiles(ctx context.Context, claim string) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		_, err := w.tx.Exec(`UPDATE files SET claim = NULL WHERE claim = ? AND seq IS NULL`, claim)
		return result{}, err
	})
	return err
}

// AttachFiles records that message seq carries the files claimed under
// claim.
func (s *Store) AttachFiles(ctx context.Context, claim string, seq int64) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		_, err := w.tx.Exec(`UPDATE files SET seq = ? WHERE claim = ? AND seq IS NULL`, seq, claim)
		return result{}, err
	})
	return err
}

// DeleteMessageFiles deletes the rows of the files message seq of roomID
// carries and returns them (their blobs are the caller's to delete).
func (s *Store) DeleteMessageFiles(ctx context.Context, roomID string, seq int64) ([]parley.StoredFile, error) {
	var fs []parley.StoredFile
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		var err error
		fs, err = collectFiles(w.tx.Query(`DELETE FROM files WHERE room_id = ? AND seq = ? RETURNING `+fileCols, roomID, seq))
		return result{}, err
	})
	return fs, err
}

// SweepFiles deletes the rows of orphaned files and returns them: files
// whose message is gone or a tombstone (deleted, expired, erased: a
// crash between a deletion's commit and its files' removal), and files
// no message carries that were uploaded before unattachedBefore. A file
// claimed by a send whose message committed but whose attachment did not
// (a crash in between) is found in its room's messages and attached
// instead.
func (s *Store) SweepFiles(ctx context.Context, unattachedBefore time.Time) ([]parley.StoredFile, error) {
	var gone []parley.StoredFile
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		orphans, err := collectFiles(w.tx.Query(`DELETE FROM files WHERE seq IS NOT NULL AND NOT EXISTS
			(SELECT 1 FROM messages m WHERE m.room_id = files.room_id AND m.seq = files.seq AND m.files IS NOT NULL)
			RETURNING ` + fileCols))
		if err != nil {
			return result{}, fmt.Errorf("sweep files: %w", err)
		}
		old, err := collectFiles(w.tx.Query(`SELECT `+fileCols+` FROM files WHERE seq IS NULL AND created_at < ?`, unattachedBefore.UnixMicro()))
		if err != nil {
			return result{}, fmt.Errorf("sweep files: %w", err)
		}
		for _, f := range old {
			if f.Claim != "" {
				var seq int64
				err := w.tx.QueryRow(`SELECT seq FROM messages WHERE room_id = ? AND sender_id = ? AND files IS NOT NULL
					AND instr(files, ?) > 0 ORDER BY seq LIMIT 1`, f.RoomID, f.Uploader, `"id":"`+f.ID+`"`).Scan(&seq)
				if err == nil {
					if _, err := w.tx.Exec(`UPDATE files SET seq = ? WHERE id = ?`, seq, f.ID); err != nil {
						return result{}, fmt.Errorf("sweep files: %w", err)
					}
					continue
				}
				if !errors.Is(err, sql.ErrNoRows) {
					return result{}, fmt.Errorf("sweep files: %w", err)
				}
			}
			if _, err := w.tx.Exec(`DELETE FROM files WHERE id = ?`, f.ID); err != nil {
				return result{}, fmt.Errorf("sweep files: %w", err)
			}
			orphans = append(orphans, f)
		}
		gone = orphans
		return result{}, nil
	})
	return gone, err
}

// FilesKnown returns which of ids have a row.
func (s *Store) FilesKnown(ctx context.Context, ids []string) (map[string]bool, error) {
	known := make(map[string]bool, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		rows, err := s.rdb.QueryContext(ctx, `SELECT id FROM files WHERE id IN (?`+strings.Repeat(", ?", n-1)+`)`, args...)
		if err != nil {
			return nil, s.readErr("files known", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, s.readErr("files known", err)
			}
			known[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, s.readErr("files known", err)
		}
		ids = ids[n:]
	}
	return known, nil
}

// UploaderFiles returns the files uploader uploaded, oldest first (the
// files_uploader index; a user's files are bounded by the quota).
func (s *Store) UploaderFiles(ctx context.Context, uploader string) ([]parley.StoredFile, error) {
	fs, err := collectFiles(s.rdb.QueryContext(ctx, `SELECT `+fileCols+` FROM files WHERE uploader = ? ORDER BY created_at, id`, uploader))
	if err != nil {
		return nil, s.readErr("uploader files", err)
	}
	return fs, nil
}
