package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// Files and attachments (migration 0008, docs/files.md): the files table
// and the queries of chat.FileStore. None is on a hot path: each runs on
// the pool, outside the group-commit writers. An upload's quota check
// holds a transaction lock of its uploader (pg_advisory_xact_lock), so
// that uploads at once, on any node, never take a user past the quota.

const fileCols = `id, room_id, uploader, name, type, size, sha256, preview, created_at, coalesce(seq, 0), coalesce(claim, '')`

func scanFile(row pgx.Row) (parley.StoredFile, error) {
	var f parley.StoredFile
	err := row.Scan(&f.ID, &f.RoomID, &f.Uploader, &f.Name, &f.Type, &f.Size, &f.SHA256, &f.Preview, &f.CreatedAt, &f.Seq, &f.Claim)
	f.CreatedAt = f.CreatedAt.UTC()
	return f, err
}

func collectFiles(rows pgx.Rows, err error) ([]parley.StoredFile, error) {
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
// most quota bytes; CodeTooLarge otherwise. sum(size) of a bigint is a
// numeric: a total past an int64 (rows an import wrote before it bounded
// file sizes) is over any quota, not an overflow.
func (s *Store) CreateFile(ctx context.Context, f parley.StoredFile, quota int64) error {
	if f.CreatedAt.IsZero() {
		f.CreatedAt = parley.Now()
	}
	var inserted bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('parley.files:' || $1, 0))`, f.Uploader); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO files (id, room_id, uploader, name, type, size, sha256, preview, created_at)
			SELECT $1, $2, $3, $4, $5, $6::bigint, $7, $8, $9
			WHERE (SELECT coalesce(sum(size), 0) FROM files WHERE uploader = $3) + $6::bigint <= $10::bigint`,
			f.ID, f.RoomID, f.Uploader, f.Name, f.Type, f.Size, f.SHA256, f.Preview, f.CreatedAt, quota)
		inserted = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return s.readErr("create file", err)
	}
	if !inserted {
		return parley.Errorf(parley.CodeTooLarge, "over your file quota of %d bytes: delete messages with files to make room", quota)
	}
	return nil
}

// File returns the file of id; CodeNotFound for an unknown id.
func (s *Store) File(ctx context.Context, id string) (parley.StoredFile, error) {
	f, err := scanFile(s.pool.QueryRow(ctx, `SELECT `+fileCols+` FROM files WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return f, parley.Errorf(parley.CodeNotFound, "file not found")
	}
	if err != nil {
		return f, s.readErr("file", err)
	}
	return f, nil
}

// ClaimFiles is sqlite.Store.ClaimFiles: one UPDATE, whose row locks
// make two claims of one file at once take turns (the second finds it
// claimed).
func (s *Store) ClaimFiles(ctx context.Context, roomID, uploader, claim string, ids []string) ([]parley.StoredFile, error) {
	fs, err := collectFiles(s.pool.Query(ctx, `UPDATE files SET claim = $3
		WHERE room_id = $1 AND uploader = $2 AND id = ANY($4::text[])
			AND (claim = $3 OR (claim IS NULL AND seq IS NULL))
		RETURNING `+fileCols, roomID, uploader, claim, ids))
	if err != nil {
		return nil, s.readErr("claim files", err)
	}
	return fs, nil
}

// ReleaseFiles lets go of the unattached files claimed under claim.
func (s *Store) ReleaseFiles(ctx context.Context, claim string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE files SET claim = NULL WHERE claim = $1 AND seq IS NULL`, claim); err != nil {
		return s.readErr("release files", err)
	}
	return nil
}

// AttachFiles records that message seq carries the files claimed under
// claim.
func (s *Store) AttachFiles(ctx context.Context, claim string, seq int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE files SET seq = $2 WHERE claim = $1 AND seq IS NULL`, claim, seq); err != nil {
		return s.readErr("attach files", err)
	}
	return nil
}

// DeleteMessageFiles deletes and returns the rows of the files of message
// seq of roomID.
func (s *Store) DeleteMessageFiles(ctx context.Context, roomID string, seq int64) ([]parley.StoredFile, error) {
	fs, err := collectFiles(s.pool.Query(ctx, `DELETE FROM files WHERE room_id = $1 AND seq = $2 RETURNING `+fileCols, roomID, seq))
	if err != nil {
		return nil, s.readErr("delete message files", err)
	}
	return fs, nil
}

// SweepFiles is sqlite.Store.SweepFiles.
func (s *Store) SweepFiles(ctx context.Context, unattachedBefore time.Time) ([]parley.StoredFile, error) {
	var gone []parley.StoredFile
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		orphans, err := collectFiles(tx.Query(ctx, `DELETE FROM files WHERE seq IS NOT NULL AND NOT EXISTS
			(SELECT 1 FROM messages m WHERE m.room_id = files.room_id AND m.seq = files.seq AND m.files IS NOT NULL)
			RETURNING `+fileCols))
		if err != nil {
			return err
		}
		old, err := collectFiles(tx.Query(ctx, `SELECT `+fileCols+` FROM files WHERE seq IS NULL AND created_at < $1 FOR UPDATE`, unattachedBefore))
		if err != nil {
			return err
		}
		for _, f := range old {
			if f.Claim != "" {
				var seq int64
				err := tx.QueryRow(ctx, `SELECT seq FROM messages WHERE room_id = $1 AND sender_id = $2 AND files IS NOT NULL
					AND strpos(files, $3) > 0 ORDER BY seq LIMIT 1`, f.RoomID, f.Uploader, `"id":"`+f.ID+`"`).Scan(&seq)
				if err == nil {
					if _, err := tx.Exec(ctx, `UPDATE files SET seq = $1 WHERE id = $2`, seq, f.ID); err != nil {
						return err
					}
					continue
				}
				if !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `DELETE FROM files WHERE id = $1`, f.ID); err != nil {
				return err
			}
			orphans = append(orphans, f)
		}
		gone = orphans
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sweep files: %w", s.readErr("sweep files", err))
	}
	return gone, nil
}

// FilesKnown returns which of ids have a row.
func (s *Store) FilesKnown(ctx context.Context, ids []string) (map[string]bool, error) {
	known := make(map[string]bool, len(ids))
	rows, err := s.pool.Query(ctx, `SELECT id FROM files WHERE id = ANY($1::text[])`, ids)
	if err != nil {
		return nil, s.readErr("files known", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.readErr("files known", err)
		}
		known[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("files known", err)
	}
	return known, nil
}

// UploaderFiles is sqlite.Store.UploaderFiles.
func (s *Store) UploaderFiles(ctx context.Context, uploader string) ([]parley.StoredFile, error) {
	fs, err := collectFiles(s.pool.Query(ctx, `SELECT `+fileCols+` FROM files WHERE uploader = $1 ORDER BY created_at, id COLLATE "C"`, uploader))
	if err != nil {
		return nil, s.readErr("uploader files", err)
	}
	return fs, nil
}
