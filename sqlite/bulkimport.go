package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"parley"
	"parley/bulk"
	"parley/storagefull"
)

// importStmts are the statements of one Import, prepared on its
// transaction.
var importStmts = [...]string{
	`INSERT INTO users (id, name, password_hash, created_at) VALUES (?, ?, coalesce(?, x''), ?) ON CONFLICT DO NOTHING`,
	`INSERT INTO tokens (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	`INSERT INTO api_keys (id, name, user_id, hash, scopes, room_id, created_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, nullif(?, ''), ?, ?) ON CONFLICT DO NOTHING`,
	`INSERT INTO name_holds (name, until) VALUES (?, ?) ON CONFLICT DO NOTHING`,
	`INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_change, retention_seconds,
		last_activity_at, created_at, direct_key, num)
		VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, nullif(?, ''), (SELECT coalesce(max(num), 0) + 1 FROM rooms)) ON CONFLICT DO NOTHING`,
	`INSERT INTO change_keys (room_id, user_id, client_id, seq, deleted, change) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	`INSERT INTO message_reactions (room_id, seq, emoji, user_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	`INSERT INTO files (id, room_id, uploader, name, type, size, sha256, preview, created_at, seq, claim)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, nullif(?, 0), nullif(?, '')) ON CONFLICT DO NOTHING`,
	`INSERT INTO bans (room_id, user_id, actor_id, banned_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	`INSERT INTO members (room_id, user_id, read_seq, joined_at, role, notify) VALUES (?, ?, ?, ?, ?, coalesce(nullif(?, ''), 'all'))
		ON CONFLICT DO NOTHING`,
}

const (
	impUser = iota
	impToken
	impAPIKey
	impHold
	impRoom
	impChangeKey
	impReaction
	impFile
	impBan
	impMember
)

// Import implements bulk.Sink: it writes b in one transaction of the
// writer's connection, between the writer's batches. It writes no events:
// it is for a data directory no server runs on (parley import holds its
// lock).
func (s *Store) Import(ctx context.Context, b *bulk.Batch) (n bulk.Counts, err error) {
	if s.closed.Load() {
		return n, errClosed
	}
	s.txMu.Lock()
	defer s.txMu.Unlock()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return n, fmt.Errorf("import: %w", s.writeErr(storagefull.Request, err))
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	im := importer{ctx: ctx, tx: tx, rooms: map[string]struct{}{}}
	for i, q := range importStmts {
		if im.st[i], err = tx.PrepareContext(ctx, q); err != nil {
			return n, fmt.Errorf("import: prepare: %w", err)
		}
		defer im.st[i].Close()
	}
	defer func() {
		for _, st := range im.prepared {
			st.Close()
		}
	}()
	if n, err = im.run(b); err != nil {
		return bulk.Counts{}, err
	}
	if err := tx.Commit(); err != nil {
		return bulk.Counts{}, fmt.Errorf("import: commit: %w", s.writeErr(storagefull.Request, err))
	}
	if s.idx != nil {
		// The search indexer indexes them as it does sent ones.
		s.idx.sent(im.rooms, int(n.Messages))
	}
	return n, nil
}

// importer is one Import's transaction.
type importer struct {
	ctx      context.Context
	tx       *sql.Tx
	st       [len(importStmts)]*sql.Stmt
	prepared map[string]*sql.Stmt // the grouped statements (stmt)
	rooms    map[string]struct{}  // the rooms messages were written in
}

// exec runs statement i and reports whether it wrote a row.
func (im *importer) exec(i int, args ...any) (bool, error) {
	res, err := im.st[i].ExecContext(im.ctx, args...)
	if err != nil {
		return false, err
	}
	k, err := res.RowsAffected()
	return k > 0, err
}

func (im *importer) run(b *bulk.Batch) (n bulk.Counts, err error) {
	for _, u := range b.Users {
		ok, err := im.exec(impUser, u.ID, u.Name, u.PasswordHash, u.CreatedAt.UnixMicro())
		if err != nil {
			return n, fmt.Errorf("import user %s: %w", u.ID, err)
		}
		if ok {
			n.Users++
			continue
		}
		var other string
		err = im.tx.QueryRowContext(im.ctx, `SELECT id FROM users WHERE name = ?`, u.Name).Scan(&other)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return n, fmt.Errorf("import user %s: %w", u.ID, err)
		}
		if other != "" && other != u.ID {
			return n, bulk.NameTaken(u, other)
		}
	}
	for _, t := range b.Tokens {
		ok, err := im.exec(impToken, t.Hash, t.UserID, t.CreatedAt.UnixMicro(), t.ExpiresAt.UnixMicro())
		if err != nil {
			return n, fmt.Errorf("import token of user %s: %w", t.UserID, err)
		}
		n.Tokens += b2i(ok)
	}
	for i := range b.APIKeys {
		k := &b.APIKeys[i]
		ok, err := im.exec(impAPIKey, k.ID, k.Name, k.UserID, k.Hash, strings.Join(k.Scopes, " "), k.RoomID,
			k.CreatedAt.UnixMicro(), optMicroArg(k.RevokedAt))
		if err != nil {
			return n, fmt.Errorf("import API key %s: %w", k.ID, err)
		}
		if ok {
			n.APIKeys++
			continue
		}
		var other string
		err = im.tx.QueryRowContext(im.ctx, `SELECT id FROM api_keys WHERE name = ?`, k.Name).Scan(&other)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return n, fmt.Errorf("import API key %s: %w", k.ID, err)
		}
		if other != "" && other != k.ID {
			return n, bulk.KeyNameTaken(k, other)
		}
	}
	for _, h := range b.NameHolds {
		ok, err := im.exec(impHold, h.Name, h.Until.UnixMicro())
		if err != nil {
			return n, fmt.Errorf("import name hold %q: %w", h.Name, err)
		}
		n.NameHolds += b2i(ok)
	}
	for i := range b.Rooms {
		if err := im.room(&b.Rooms[i], &n); err != nil {
			return n, err
		}
	}
	if err := im.messages(b.Messages, &n); err != nil {
		return n, err
	}
	for _, k := range b.ChangeKeys {
		ok, err := im.exec(impChangeKey, k.RoomID, k.UserID, k.ClientID, k.Seq, k.Deleted, k.Change)
		if err != nil {
			return n, fmt.Errorf("import change key of room %s: %w", k.RoomID, err)
		}
		n.ChangeKeys += b2i(ok)
	}
	for _, x := range b.Reactions {
		ok, err := im.exec(impReaction, x.RoomID, x.Seq, x.Emoji, x.UserID, x.CreatedAt.UnixMicro())
		if err != nil {
			return n, fmt.Errorf("import reaction of room %s: %w", x.RoomID, err)
		}
		n.Reactions += b2i(ok)
	}
	for _, f := range b.Files {
		ok, err := im.exec(impFile, f.ID, f.RoomID, f.Uploader, f.Name, f.Type, f.Size, f.SHA256, f.Preview, f.CreatedAt.UnixMicro(), f.Seq, f.Claim)
		if err != nil {
			return n, fmt.Errorf("import file %s: %w", f.ID, err)
		}
		n.Files += b2i(ok)
	}
	for _, x := range b.Bans {
		ok, err := im.exec(impBan, x.RoomID, x.UserID, x.ActorID, x.BannedAt.UnixMicro())
		if err != nil {
			return n, fmt.Errorf("import ban of %s in room %s: %w", x.UserID, x.RoomID, err)
		}
		n.Bans += b2i(ok)
	}
	return n, im.members(b.Members, &n)
}

// room inserts r, or checks that the room under its id is the same one.
func (im *importer) room(r *bulk.Room, n *bulk.Counts) error {
	ok, err := im.exec(impRoom, r.ID, r.Kind, r.Title, r.Capacity, r.LastSeq, r.LastChange, r.RetentionSeconds,
		r.LastActivityAt.UnixMicro(), r.CreatedAt.UnixMicro(), r.DirectKey)
	if err != nil {
		return fmt.Errorf("import room %s: %w", r.ID, err)
	}
	if ok {
		n.Rooms++
		return nil
	}
	var have bulk.Room
	var created int64
	err = im.tx.QueryRowContext(im.ctx, `SELECT kind, created_at, coalesce(direct_key, '') FROM rooms WHERE id = ?`, r.ID).
		Scan(&have.Kind, &created, &have.DirectKey)
	if errors.Is(err, sql.ErrNoRows) {
		var other string
		im.tx.QueryRowContext(im.ctx, `SELECT id FROM rooms WHERE direct_key = ?`, r.DirectKey).Scan(&other)
		return bulk.DirectTaken(r, other)
	}
	if err != nil {
		return fmt.Errorf("import room %s: %w", r.ID, err)
	}
	have.ID, have.CreatedAt = r.ID, fromMicro(created)
	return bulk.SameRoom(r, &have)
}

// msgImportCols is how many columns a message's row of the grouped
// statement has.
const msgImportCols = 21

// The grouped statements of messages, by chunk size (chunks).
func insertMessagesText(rows int) string {
	return `INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change, reactions,
		reply_seq, reply_sender, reply_excerpt, thread, pinned_by, pinned_at, pin_change, files, mentions)
		VALUES ` + values(rows, msgImportCols) + ` ON CONFLICT DO NOTHING RETURNING room_id, seq`
}

// stmt returns text prepared on the transaction, once per Import.
func (im *importer) stmt(text string) (*sql.Stmt, error) {
	if st := im.prepared[text]; st != nil {
		return st, nil
	}
	st, err := im.tx.PrepareContext(im.ctx, text)
	if err != nil {
		return nil, err
	}
	if im.prepared == nil {
		im.prepared = map[string]*sql.Stmt{}
	}
	im.prepared[text] = st
	return st, nil
}

// messages inserts ms, a chunk a statement, then moves their rooms'
// counters; the search indexer indexes them after the commit (Import).
func (im *importer) messages(ms []parley.Message, n *bulk.Counts) error {
	type key struct {
		room string
		seq  int64
	}
	wrote := map[key]bool{}
	args := make([]any, 0, chunkSizes[0]*msgImportCols)
	err := chunks(len(ms), func(start, size, _ int) error {
		st, err := im.stmt(insertMessagesText(size))
		if err != nil {
			return err
		}
		args = args[:0]
		for _, m := range ms[start : start+size] {
			args = append(args, m.RoomID, m.Seq, m.ID, m.SenderID, m.SenderName, m.Body, m.ClientID, m.SentAt.UnixMicro(),
				optMicroArg(m.EditedAt), optMicroArg(m.DeletedAt), m.Change, parley.EncodeReactions(m.Reactions))
			r := m.ReplyTo
			if r == nil {
				r = &parley.ReplyRef{}
			}
			var files any // NULL for none, as a send stores it
			if m.Files != "" {
				files = string(m.Files)
			}
			args = append(args, r.Seq, r.SenderName, r.Excerpt, parley.EncodeThread(m.Thread))
			if p := m.Pinned; p != nil && m.DeletedAt == nil {
				args = append(args, p.By, p.At.UnixMicro(), p.Change)
			} else {
				args = append(args, "", nil, int64(0))
			}
			args = append(args, files, mentionsText(m.Mentions)) // NULL for none, as a send stores it
		}
		rows, err := st.QueryContext(im.ctx, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var k key
		for rows.Next() {
			if err := rows.Scan(&k.room, &k.seq); err != nil {
				return err
			}
			wrote[k] = true
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("import messages: %w", err)
	}
	n.Messages += int64(len(wrote))
	for i := 0; i < len(ms); {
		room := ms[i].RoomID
		var top parley.Message // the room's highest seq, change and send time written
		for ; i < len(ms) && ms[i].RoomID == room; i++ {
			m := &ms[i]
			if !wrote[key{m.RoomID, m.Seq}] {
				var id string
				err := im.tx.QueryRowContext(im.ctx, `SELECT id FROM messages WHERE room_id = ? AND seq = ?`, m.RoomID, m.Seq).Scan(&id)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("import message %d of room %s: %w", m.Seq, m.RoomID, err)
				}
				if id != m.ID {
					return bulk.MessageTaken(m, id)
				}
				continue
			}
			top.Seq, top.Change = max(top.Seq, m.Seq), max(top.Change, m.Change)
			if m.SentAt.After(top.SentAt) {
				top.SentAt = m.SentAt
			}
		}
		if top.Seq == 0 {
			continue
		}
		im.rooms[room] = struct{}{} // for the search indexer, once committed
		_, err := im.tx.ExecContext(im.ctx, `UPDATE rooms SET last_seq = max(last_seq, ?), last_change = max(last_change, ?),
			last_activity_at = max(last_activity_at, ?) WHERE id = ?`, top.Seq, top.Change, top.SentAt.UnixMicro(), room)
		if err != nil {
			return fmt.Errorf("import messages of room %s: %w", room, err)
		}
	}
	return nil
}

// members inserts ms, then sets their rooms' member_count.
func (im *importer) members(ms []bulk.Member, n *bulk.Counts) error {
	rooms := map[string]bool{}
	for _, m := range ms {
		ok, err := im.exec(impMember, m.RoomID, m.UserID, m.ReadSeq, m.JoinedAt.UnixMicro(), m.Role, m.Notifications)
		if err != nil {
			return fmt.Errorf("import member %s of room %s: %w", m.UserID, m.RoomID, err)
		}
		if ok {
			n.Members++
			rooms[m.RoomID] = true
			continue
		}
		var one int
		err = im.tx.QueryRowContext(im.ctx, `SELECT 1 FROM members WHERE room_id = ? AND user_id = ?`, m.RoomID, m.UserID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return bulk.SecondOwner(&m.Member)
		}
		if err != nil {
			return fmt.Errorf("import member %s of room %s: %w", m.UserID, m.RoomID, err)
		}
	}
	for id := range rooms {
		var capacity, count int
		err := im.tx.QueryRowContext(im.ctx, `SELECT capacity, (SELECT count(*) FROM members WHERE room_id = ?1) FROM rooms WHERE id = ?1`, id).
			Scan(&capacity, &count)
		if err != nil {
			return fmt.Errorf("count members of room %s: %w", id, err)
		}
		if capacity > 0 && count > capacity {
			return bulk.OverCapacity(id, count, capacity)
		}
		if _, err := im.tx.ExecContext(im.ctx, `UPDATE rooms SET member_count = ? WHERE id = ?`, count, id); err != nil {
			return fmt.Errorf("count members of room %s: %w", id, err)
		}
	}
	return nil
}

// optMicroArg is a time that may be nil, as a statement's argument.
func optMicroArg(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func b2i(ok bool) int64 {
	if ok {
		return 1
	}
	return 0
}
