package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"parley"
	"parley/bulk"
	"parley/schema"
)

// # Export and import (parley export, parley import)
//
// A Snapshot reads a database for bulk.Export from one read transaction
// of a read-only connection, as Backup does: in WAL mode it sees the last
// commit before its first read, whatever a running server commits
// meanwhile, and takes no lock (the checkpointer cannot restart the WAL
// until it ends). Import writes a bulk.Batch in one transaction of the
// Store's writer connection, between the writer's batches (txMu), for
// parley import into a stopped node's data directory.

// Snapshot is a consistent read of a SQLite database: a bulk.Source.
type Snapshot struct {
	db *sql.DB
	tx *sql.Tx
}

var (
	_ bulk.Source = (*Snapshot)(nil)
	_ bulk.Sink   = (*Store)(nil)
)

// OpenSnapshot opens the database at path read-only and starts the read
// transaction of the snapshot, which Close ends. The schema must be this
// program's latest: an older database is refused (parley migrate first),
// as is a newer one.
func OpenSnapshot(ctx context.Context, path string) (*Snapshot, error) {
	if err := checkHeader(path); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	db := openReadOnly(path)
	s := &Snapshot{db: db}
	var err error
	if s.tx, err = db.BeginTx(ctx, nil); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.checkSchema(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// checkSchema is the snapshot's first read: it fixes the snapshot.
func (s *Snapshot) checkSchema(ctx context.Context) error {
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	var v int
	if err := s.tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("%w: no schema_migrations (%v)", ErrNotParley, err)
	}
	if latest := ms[len(ms)-1].Version; v != latest {
		return fmt.Errorf("schema version %d, this program's is %d: export with the parley that serves it, or parley migrate it first", v, latest)
	}
	return nil
}

// Close ends the snapshot.
func (s *Snapshot) Close() error {
	s.tx.Rollback()
	return s.db.Close()
}

// roomUsers is the accounts that room ?1 names: its members, bans and
// their actors, senders and change keys.
const roomUsers = `SELECT user_id FROM members WHERE room_id = ?1 UNION SELECT user_id FROM bans WHERE room_id = ?1
	UNION SELECT actor_id FROM bans WHERE room_id = ?1 UNION SELECT sender_id FROM messages WHERE room_id = ?1
	UNION SELECT user_id FROM change_keys WHERE room_id = ?1 UNION SELECT user_id FROM message_reactions WHERE room_id = ?1`

// each runs query and calls f with each row, until f fails.
func (s *Snapshot) each(ctx context.Context, f func(*sql.Rows) error, query string, args ...any) error {
	rows, err := s.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Users implements bulk.Source.
func (s *Snapshot) Users(ctx context.Context, roomID string, secrets bool, each func(*bulk.User) error) error {
	q := `SELECT id, name, created_at, CASE WHEN ?2 THEN password_hash END FROM users`
	if roomID != "" {
		q += ` WHERE id IN (` + roomUsers + `)`
	}
	var u bulk.User
	var created int64
	return s.each(ctx, func(rows *sql.Rows) error {
		u.PasswordHash = nil
		if err := rows.Scan(&u.ID, &u.Name, &created, &u.PasswordHash); err != nil {
			return err
		}
		u.CreatedAt = fromMicro(created)
		return each(&u)
	}, q+` ORDER BY id`, roomID, secrets)
}

// Tokens implements bulk.Source.
func (s *Snapshot) Tokens(ctx context.Context, roomID string, each func(*bulk.Token) error) error {
	q := `SELECT hash, user_id, created_at, expires_at FROM tokens`
	if roomID != "" {
		q += ` WHERE user_id IN (` + roomUsers + `)`
	}
	var t bulk.Token
	var created, expires int64
	return s.each(ctx, func(rows *sql.Rows) error {
		if err := rows.Scan(&t.Hash, &t.UserID, &created, &expires); err != nil {
			return err
		}
		t.CreatedAt, t.ExpiresAt = fromMicro(created), fromMicro(expires)
		return each(&t)
	}, q+` ORDER BY hash`, roomID)
}

// APIKeys implements bulk.Source.
func (s *Snapshot) APIKeys(ctx context.Context, roomID string, each func(*bulk.APIKey) error) error {
	q := `SELECT id, name, user_id, hash, scopes, coalesce(room_id, ''), created_at, revoked_at FROM api_keys`
	if roomID != "" {
		q += ` WHERE user_id IN (` + roomUsers + `)`
	}
	var k bulk.APIKey
	var scopes string
	var created int64
	var revoked sql.NullInt64
	return s.each(ctx, func(rows *sql.Rows) error {
		if err := rows.Scan(&k.ID, &k.Name, &k.UserID, &k.Hash, &scopes, &k.RoomID, &created, &revoked); err != nil {
			return err
		}
		k.Scopes, k.CreatedAt, k.RevokedAt = strings.Fields(scopes), fromMicro(created), optMicro(revoked)
		return each(&k)
	}, q+` ORDER BY id`, roomID)
}

// NameHolds implements bulk.Source.
func (s *Snapshot) NameHolds(ctx context.Context, each func(*bulk.NameHold) error) error {
	var h bulk.NameHold
	var until int64
	return s.each(ctx, func(rows *sql.Rows) error {
		if err := rows.Scan(&h.Name, &until); err != nil {
			return err
		}
		h.Until = fromMicro(until)
		return each(&h)
	}, `SELECT name, until FROM name_holds ORDER BY name`)
}

// Rooms implements bulk.Source.
func (s *Snapshot) Rooms(ctx context.Context, after string, limit int) ([]bulk.Room, error) {
	var out []bulk.Room
	err := s.each(ctx, func(rows *sql.Rows) error {
		r, err := scanRoom(rows)
		out = append(out, bulk.Room{Room: r, CreatedAt: r.CreatedAt, DirectKey: r.DirectKey})
		return err
	}, `SELECT `+roomCols+` FROM rooms WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
	return out, err
}

// Room implements bulk.Source.
func (s *Snapshot) Room(ctx context.Context, id string) (bulk.Room, error) {
	r, err := scanRoom(s.tx.QueryRowContext(ctx, `SELECT `+roomCols+` FROM rooms WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return bulk.Room{}, parley.Errorf(parley.CodeNotFound, "no room %q", id)
	}
	return bulk.Room{Room: r, CreatedAt: r.CreatedAt, DirectKey: r.DirectKey}, err
}

// Messages implements bulk.Source.
func (s *Snapshot) Messages(ctx context.Context, roomID string, each func(*parley.Message) error) error {
	return s.each(ctx, func(rows *sql.Rows) error {
		m, err := scanMessage(rows)
		if err != nil {
			return err
		}
		return each(&m)
	}, `SELECT `+msgCols+` FROM messages WHERE room_id = ? ORDER BY seq`, roomID)
}

// ChangeKeys implements bulk.Source.
func (s *Snapshot) ChangeKeys(ctx context.Context, roomID string, each func(*bulk.ChangeKey) error) error {
	var k bulk.ChangeKey
	return s.each(ctx, func(rows *sql.Rows) error {
		if err := rows.Scan(&k.RoomID, &k.UserID, &k.ClientID, &k.Seq, &k.Deleted, &k.Change); err != nil {
			return err
		}
		return each(&k)
	}, `SELECT room_id, user_id, client_id, seq, deleted, change FROM change_keys WHERE room_id = ? ORDER BY user_id, client_id`, roomID)
}

// Reactions implements bulk.Source.
func (s *Snapshot) Reactions(ctx context.Context, roomID string, each func(*bulk.Reaction) error) error {
	var x bulk.Reaction
	return s.each(ctx, func(rows *sql.Rows) error {
		var at int64
		if err := rows.Scan(&x.RoomID, &x.Seq, &x.Emoji, &x.UserID, &at); err != nil {
			return err
		}
		x.CreatedAt = fromMicro(at)
		return each(&x)
	}, `SELECT room_id, seq, emoji, user_id, created_at FROM message_reactions WHERE room_id = ? ORDER BY seq, emoji, user_id`, roomID)
}

// Files implements bulk.Source.
func (s *Snapshot) Files(ctx context.Context, roomID string, each func(*bulk.File) error) error {
	var f bulk.File
	return s.each(ctx, func(rows *sql.Rows) error {
		var at int64
		if err := rows.Scan(&f.ID, &f.RoomID, &f.Uploader, &f.Name, &f.Type, &f.Size, &f.SHA256, &f.Preview, &at, &f.Seq, &f.Claim); err != nil {
			return err
		}
		f.CreatedAt = fromMicro(at)
		return each(&f)
	}, `SELECT id, room_id, uploader, name, type, size, sha256, preview, created_at, coalesce(seq, 0), coalesce(claim, '')
		FROM files WHERE room_id = ? ORDER BY id`, roomID)
}

// Bans implements bulk.Source.
func (s *Snapshot) Bans(ctx context.Context, roomID string, each func(*parley.Ban) error) error {
	var b parley.Ban
	var at int64
	return s.each(ctx, func(rows *sql.Rows) error {
		if err := rows.Scan(&b.RoomID, &b.UserID, &b.Name, &b.ActorID, &at); err != nil {
			return err
		}
		b.BannedAt = fromMicro(at)
		return each(&b)
	}, `SELECT b.room_id, b.user_id, u.name, b.actor_id, b.banned_at FROM bans b JOIN users u ON u.id = b.user_id
		WHERE b.room_id = ? ORDER BY b.user_id`, roomID)
}

// Members implements bulk.Source.
func (s *Snapshot) Members(ctx context.Context, roomID string, each func(*bulk.Member) error) error {
	var m bulk.Member
	var joined int64
	return s.each(ctx, func(rows *sql.Rows) error {
		if err := rows.Scan(&m.RoomID, &m.UserID, &m.Role, &m.ReadSeq, &joined, &m.Notifications); err != nil {
			return err
		}
		m.JoinedAt = fromMicro(joined)
		return each(&m)
	}, `SELECT room_id, user_id, role, read_seq, joined_at, CASE notify WHEN 'all' THEN '' ELSE notify END
		FROM members WHERE room_id = ? ORDER BY user_id`, roomID)
}
