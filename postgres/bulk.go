package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"parley"
	"parley/bulk"
	"parley/schema"
)

// # Export and import (parley export, parley import)
//
// A Snapshot reads the database for bulk.Export from one REPEATABLE READ,
// READ ONLY transaction on a connection of its own: every read sees the
// database as of the snapshot's first, whatever the nodes commit
// meanwhile, and blocks none of their writes. Import writes a bulk.Batch
// in one transaction (bulkimport.go).

// Snapshot is a consistent read of the PostgreSQL store: a bulk.Source.
type Snapshot struct {
	conn *pgx.Conn
	tx   pgx.Tx
}

var (
	_ bulk.Source = (*Snapshot)(nil)
	_ bulk.Sink   = (*Store)(nil)
)

// OpenSnapshot connects to the database at url and starts the snapshot's
// transaction, which Close ends. The schema must be this program's
// latest (parley migrate an older one first).
func OpenSnapshot(ctx context.Context, url string) (*Snapshot, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Snapshot{conn: conn}
	if s.tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := s.checkSchema(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("postgres: %w", err)
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
	if err := s.tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("not a Parley database: %w", err)
	}
	if latest := ms[len(ms)-1].Version; v != latest {
		return fmt.Errorf("schema version %d, this program's is %d: export with the parley that serves it, or parley migrate it first", v, latest)
	}
	return nil
}

// Close ends the snapshot.
func (s *Snapshot) Close() error {
	ctx := context.Background()
	s.tx.Rollback(ctx)
	return s.conn.Close(ctx)
}

// roomUsers is the accounts that room $1 names: its members, bans and
// their actors, senders and change keys.
const roomUsers = `SELECT user_id FROM members WHERE room_id = $1 UNION SELECT user_id FROM bans WHERE room_id = $1
	UNION SELECT actor_id FROM bans WHERE room_id = $1 UNION SELECT sender_id FROM messages WHERE room_id = $1
	UNION SELECT user_id FROM change_keys WHERE room_id = $1 UNION SELECT user_id FROM message_reactions WHERE room_id = $1`

// each runs query and calls f with each row, until f fails.
func (s *Snapshot) each(ctx context.Context, f func(pgx.Rows) error, query string, args ...any) error {
	rows, err := s.tx.Query(ctx, query, args...)
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
	q, args := `SELECT id, name, created_at, CASE WHEN $1::boolean THEN password_hash END FROM users`, []any{secrets}
	if roomID != "" {
		q, args = `SELECT id, name, created_at, CASE WHEN $2::boolean THEN password_hash END FROM users
			WHERE id IN (`+roomUsers+`)`, []any{roomID, secrets}
	}
	var u bulk.User
	return s.each(ctx, func(rows pgx.Rows) error {
		u.PasswordHash = nil
		if err := rows.Scan(&u.ID, &u.Name, &u.CreatedAt, &u.PasswordHash); err != nil {
			return err
		}
		u.CreatedAt = u.CreatedAt.UTC()
		return each(&u)
	}, q+` ORDER BY id`, args...)
}

// Tokens implements bulk.Source.
func (s *Snapshot) Tokens(ctx context.Context, roomID string, each func(*bulk.Token) error) error {
	q, args := `SELECT hash, user_id, created_at, expires_at FROM tokens`, []any(nil)
	if roomID != "" {
		q, args = q+` WHERE user_id IN (`+roomUsers+`)`, []any{roomID}
	}
	var t bulk.Token
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&t.Hash, &t.UserID, &t.CreatedAt, &t.ExpiresAt); err != nil {
			return err
		}
		t.CreatedAt, t.ExpiresAt = t.CreatedAt.UTC(), t.ExpiresAt.UTC()
		return each(&t)
	}, q+` ORDER BY hash`, args...)
}

// APIKeys implements bulk.Source.
func (s *Snapshot) APIKeys(ctx context.Context, roomID string, each func(*bulk.APIKey) error) error {
	q, args := `SELECT id, name, user_id, hash, scopes, coalesce(room_id, ''), created_at, revoked_at FROM api_keys`, []any(nil)
	if roomID != "" {
		q, args = q+` WHERE user_id IN (`+roomUsers+`)`, []any{roomID}
	}
	var k bulk.APIKey
	var scopes string
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&k.ID, &k.Name, &k.UserID, &k.Hash, &scopes, &k.RoomID, &k.CreatedAt, &k.RevokedAt); err != nil {
			return err
		}
		k.Scopes, k.CreatedAt, k.RevokedAt = strings.Fields(scopes), k.CreatedAt.UTC(), utcPtr(k.RevokedAt)
		return each(&k)
	}, q+` ORDER BY id`, args...)
}

// NameHolds implements bulk.Source.
func (s *Snapshot) NameHolds(ctx context.Context, each func(*bulk.NameHold) error) error {
	var h bulk.NameHold
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&h.Name, &h.Until); err != nil {
			return err
		}
		h.Until = h.Until.UTC()
		return each(&h)
	}, `SELECT name, until FROM name_holds ORDER BY name COLLATE "C"`)
}

// Rooms implements bulk.Source.
func (s *Snapshot) Rooms(ctx context.Context, after string, limit int) ([]bulk.Room, error) {
	var out []bulk.Room
	err := s.each(ctx, func(rows pgx.Rows) error {
		r, err := scanRoom(rows)
		out = append(out, bulk.Room{Room: r, CreatedAt: r.CreatedAt, DirectKey: r.DirectKey})
		return err
	}, `SELECT `+roomOut("rooms")+` FROM rooms WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	return out, err
}

// Room implements bulk.Source.
func (s *Snapshot) Room(ctx context.Context, id string) (bulk.Room, error) {
	r, err := scanRoom(s.tx.QueryRow(ctx, `SELECT `+roomOut("rooms")+` FROM rooms WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return bulk.Room{}, parley.Errorf(parley.CodeNotFound, "no room %q", id)
	}
	return bulk.Room{Room: r, CreatedAt: r.CreatedAt, DirectKey: r.DirectKey}, err
}

// Messages implements bulk.Source.
func (s *Snapshot) Messages(ctx context.Context, roomID string, each func(*parley.Message) error) error {
	var m parley.Message
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(messageDest(&m)...); err != nil {
			return err
		}
		fixMessage(&m)
		return each(&m)
	}, `SELECT `+msgCols+` FROM messages WHERE room_id = $1 ORDER BY seq`, roomID)
}

// ChangeKeys implements bulk.Source.
func (s *Snapshot) ChangeKeys(ctx context.Context, roomID string, each func(*bulk.ChangeKey) error) error {
	var k bulk.ChangeKey
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&k.RoomID, &k.UserID, &k.ClientID, &k.Seq, &k.Deleted, &k.Change); err != nil {
			return err
		}
		return each(&k)
	}, `SELECT room_id, user_id, client_id, seq, deleted, change FROM change_keys WHERE room_id = $1
		ORDER BY user_id, client_id COLLATE "C"`, roomID)
}

// Reactions implements bulk.Source.
func (s *Snapshot) Reactions(ctx context.Context, roomID string, each func(*bulk.Reaction) error) error {
	var x bulk.Reaction
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&x.RoomID, &x.Seq, &x.Emoji, &x.UserID, &x.CreatedAt); err != nil {
			return err
		}
		x.CreatedAt = x.CreatedAt.UTC()
		return each(&x)
	}, `SELECT room_id, seq, emoji, user_id, created_at FROM message_reactions WHERE room_id = $1
		ORDER BY seq, emoji COLLATE "C", user_id COLLATE "C"`, roomID)
}

// Files implements bulk.Source.
func (s *Snapshot) Files(ctx context.Context, roomID string, each func(*bulk.File) error) error {
	var f bulk.File
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&f.ID, &f.RoomID, &f.Uploader, &f.Name, &f.Type, &f.Size, &f.SHA256, &f.Preview, &f.CreatedAt, &f.Seq, &f.Claim); err != nil {
			return err
		}
		f.CreatedAt = f.CreatedAt.UTC()
		return each(&f)
	}, `SELECT id, room_id, uploader, name, type, size, sha256, preview, created_at, coalesce(seq, 0), coalesce(claim, '')
		FROM files WHERE room_id = $1 ORDER BY id COLLATE "C"`, roomID)
}

// Bans implements bulk.Source.
func (s *Snapshot) Bans(ctx context.Context, roomID string, each func(*parley.Ban) error) error {
	var b parley.Ban
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&b.RoomID, &b.UserID, &b.Name, &b.ActorID, &b.BannedAt); err != nil {
			return err
		}
		b.BannedAt = b.BannedAt.UTC()
		return each(&b)
	}, `SELECT b.room_id, b.user_id, u.name, b.actor_id, b.banned_at FROM bans b JOIN users u ON u.id = b.user_id
		WHERE b.room_id = $1 ORDER BY b.user_id`, roomID)
}

// Members implements bulk.Source.
func (s *Snapshot) Members(ctx context.Context, roomID string, each func(*bulk.Member) error) error {
	var m bulk.Member
	return s.each(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&m.RoomID, &m.UserID, &m.Role, &m.ReadSeq, &m.JoinedAt, &m.Notifications); err != nil {
			return err
		}
		m.JoinedAt = m.JoinedAt.UTC()
		return each(&m)
	}, `SELECT room_id, user_id, role, read_seq, joined_at, CASE notify WHEN 'all' THEN '' ELSE notify END
		FROM members WHERE room_id = $1 ORDER BY user_id`, roomID)
}
