package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
	"parley/bulk"
)

// The statements of Import. Each record is one statement of a pipeline
// (pgx.Batch) per type, so that a batch of records costs a round trip
// per type, not per record.
const (
	importUser = `INSERT INTO users (id, name, password_hash, created_at) VALUES ($1, $2, coalesce($3, ''::bytea), $4)
		ON CONFLICT DO NOTHING`
	importToken  = `INSERT INTO tokens (hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`
	importAPIKey = `INSERT INTO api_keys (id, name, user_id, hash, scopes, room_id, created_at, revoked_at)
		VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7, $8) ON CONFLICT DO NOTHING`
	importHold = `INSERT INTO name_holds (name, until) VALUES ($1, $2) ON CONFLICT DO NOTHING`
	importRoom = `INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_change, retention_seconds,
		last_activity_at, created_at, direct_key)
		VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8, $9, nullif($10, '')) ON CONFLICT DO NOTHING`
	importFile = `INSERT INTO files (id, room_id, uploader, name, type, size, sha256, preview, created_at, seq, claim)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, nullif($10::bigint, 0), nullif($11, '')) ON CONFLICT DO NOTHING`
	importReaction = `INSERT INTO message_reactions (room_id, seq, emoji, user_id, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT DO NOTHING`
	importChangeKey = `INSERT INTO change_keys (room_id, user_id, client_id, seq, deleted, change) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT DO NOTHING`
	importBan    = `INSERT INTO bans (room_id, user_id, actor_id, banned_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`
	importMember = `INSERT INTO members (room_id, user_id, read_seq, joined_at, role, notify)
		VALUES ($1, $2, $3, $4, $5, coalesce(nullif($6, ''), 'all')) ON CONFLICT DO NOTHING`
)

// importMessages stores messages, one array a column, with their search
// vectors (none for a tombstone), as a send and an edit do, and returns
// the keys of those it wrote: one statement for a batch.
var importMessages = `INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change, reactions,
		reply_seq, reply_sender, reply_excerpt, thread, pinned_by, pinned_at, pin_change, files, mentions, tsv)
	SELECT r, s, i, sn, nm, b, c, sa, ea, da, ch, rx, rq, rs, re, th, pb, pa, pc, nullif(fl, ''), nullif(mn, ''), CASE WHEN da IS NULL AND b <> '' THEN ` + tsvOf(true)("b") + ` END
	FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::timestamptz[], $9::timestamptz[], $10::timestamptz[], $11::bigint[], $12::text[],
		$13::bigint[], $14::text[], $15::text[], $16::text[], $17::text[], $18::timestamptz[], $19::bigint[], $20::text[], $21::text[])
		AS t (r, s, i, sn, nm, b, c, sa, ea, da, ch, rx, rq, rs, re, th, pb, pa, pc, fl, mn)
	ON CONFLICT DO NOTHING
	RETURNING room_id, seq`

// Import implements bulk.Sink: it writes b in one transaction, each type's
// records in one pipeline. It writes no events: the nodes' caches of what
// it changes are the caller's to forget (parley import --redis). The rooms
// of b's messages are locked first, so that a node's send into one of
// them waits for the import, then numbers its message after the imported
// ones.
func (s *Store) Import(ctx context.Context, b *bulk.Batch) (n bulk.Counts, err error) {
	if s.closed.Load() {
		return n, errClosed
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return n, fmt.Errorf("import: %w", s.writeErr(ctx, err))
	}
	defer tx.Rollback(ctx)
	im := pgImporter{ctx: ctx, tx: tx}
	if n, err = im.run(b); err != nil {
		return bulk.Counts{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return bulk.Counts{}, fmt.Errorf("import: commit: %w", s.writeErr(ctx, err))
	}
	return n, nil
}

// pgImporter is one Import's transaction.
type pgImporter struct {
	ctx context.Context
	tx  pgx.Tx
}

// execAll runs query once with each of args, in one pipeline, and reports
// which runs wrote a row.
func (im *pgImporter) execAll(query string, args [][]any) ([]bool, error) {
	if len(args) == 0 {
		return nil, nil
	}
	var pb pgx.Batch
	for _, a := range args {
		pb.Queue(query, a...)
	}
	br := im.tx.SendBatch(im.ctx, &pb)
	wrote := make([]bool, len(args))
	for i := range args {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return nil, err
		}
		wrote[i] = tag.RowsAffected() > 0
	}
	return wrote, br.Close()
}

func count(wrote []bool) (k int64) {
	for _, w := range wrote {
		if w {
			k++
		}
	}
	return k
}

func (im *pgImporter) run(b *bulk.Batch) (n bulk.Counts, err error) {
	args := make([][]any, 0, len(b.Users))
	for _, u := range b.Users {
		args = append(args, []any{u.ID, u.Name, u.PasswordHash, u.CreatedAt})
	}
	wrote, err := im.execAll(importUser, args)
	if err != nil {
		return n, fmt.Errorf("import users: %w", err)
	}
	n.Users = count(wrote)
	for i, u := range b.Users {
		if wrote[i] {
			continue
		}
		var other string
		err := im.tx.QueryRow(im.ctx, `SELECT id FROM users WHERE name = $1`, u.Name).Scan(&other)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return n, fmt.Errorf("import user %s: %w", u.ID, err)
		}
		if other != "" && other != u.ID {
			return n, bulk.NameTaken(u, other)
		}
	}
	args = args[:0]
	for _, t := range b.Tokens {
		args = append(args, []any{t.Hash, t.UserID, t.CreatedAt, t.ExpiresAt})
	}
	if wrote, err = im.execAll(importToken, args); err != nil {
		return n, fmt.Errorf("import tokens: %w", err)
	}
	n.Tokens = count(wrote)
	args = args[:0]
	for _, k := range b.APIKeys {
		args = append(args, []any{k.ID, k.Name, k.UserID, k.Hash, strings.Join(k.Scopes, " "), k.RoomID, k.CreatedAt, k.RevokedAt})
	}
	if wrote, err = im.execAll(importAPIKey, args); err != nil {
		return n, fmt.Errorf("import API keys: %w", err)
	}
	n.APIKeys = count(wrote)
	for i := range b.APIKeys {
		if wrote[i] {
			continue
		}
		k := &b.APIKeys[i]
		var other string
		err := im.tx.QueryRow(im.ctx, `SELECT id FROM api_keys WHERE name = $1`, k.Name).Scan(&other)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return n, fmt.Errorf("import API key %s: %w", k.ID, err)
		}
		if other != "" && other != k.ID {
			return n, bulk.KeyNameTaken(k, other)
		}
	}
	args = args[:0]
	for _, h := range b.NameHolds {
		args = append(args, []any{h.Name, h.Until})
	}
	if wrote, err = im.execAll(importHold, args); err != nil {
		return n, fmt.Errorf("import name holds: %w", err)
	}
	n.NameHolds = count(wrote)
	if err := im.rooms(b.Rooms, &n); err != nil {
		return n, err
	}
	if err := im.messages(b.Messages, &n); err != nil {
		return n, err
	}
	args = args[:0]
	for _, k := range b.ChangeKeys {
		args = append(args, []any{k.RoomID, k.UserID, k.ClientID, k.Seq, k.Deleted, k.Change})
	}
	if wrote, err = im.execAll(importChangeKey, args); err != nil {
		return n, fmt.Errorf("import change keys: %w", err)
	}
	n.ChangeKeys = count(wrote)
	args = args[:0]
	for _, x := range b.Reactions {
		args = append(args, []any{x.RoomID, x.Seq, x.Emoji, x.UserID, x.CreatedAt})
	}
	if wrote, err = im.execAll(importReaction, args); err != nil {
		return n, fmt.Errorf("import reactions: %w", err)
	}
	n.Reactions = count(wrote)
	args = args[:0]
	for _, f := range b.Files {
		args = append(args, []any{f.ID, f.RoomID, f.Uploader, f.Name, f.Type, f.Size, f.SHA256, f.Preview, f.CreatedAt, f.Seq, f.Claim})
	}
	if wrote, err = im.execAll(importFile, args); err != nil {
		return n, fmt.Errorf("import files: %w", err)
	}
	n.Files = count(wrote)
	args = args[:0]
	for _, x := range b.Bans {
		args = append(args, []any{x.RoomID, x.UserID, x.ActorID, x.BannedAt})
	}
	if wrote, err = im.execAll(importBan, args); err != nil {
		return n, fmt.Errorf("import bans: %w", err)
	}
	n.Bans = count(wrote)
	return n, im.members(b.Members, &n)
}

// rooms inserts rs, or checks that the room under each id is the same one.
func (im *pgImporter) rooms(rs []bulk.Room, n *bulk.Counts) error {
	args := make([][]any, 0, len(rs))
	for _, r := range rs {
		args = append(args, []any{r.ID, r.Kind, r.Title, r.Capacity, r.LastSeq, r.LastChange, r.RetentionSeconds,
			r.LastActivityAt, r.CreatedAt, r.DirectKey})
	}
	wrote, err := im.execAll(importRoom, args)
	if err != nil {
		return fmt.Errorf("import rooms: %w", err)
	}
	n.Rooms = count(wrote)
	for i := range rs {
		if wrote[i] {
			continue
		}
		r := &rs[i]
		var have bulk.Room
		err := im.tx.QueryRow(im.ctx, `SELECT kind, created_at, coalesce(direct_key, '') FROM rooms WHERE id = $1`, r.ID).
			Scan(&have.Kind, &have.CreatedAt, &have.DirectKey)
		if errors.Is(err, pgx.ErrNoRows) {
			var other string
			im.tx.QueryRow(im.ctx, `SELECT id FROM rooms WHERE direct_key = $1`, r.DirectKey).Scan(&other)
			return bulk.DirectTaken(r, other)
		}
		if err != nil {
			return fmt.Errorf("import room %s: %w", r.ID, err)
		}
		have.ID = r.ID
		if err := bulk.SameRoom(r, &have); err != nil {
			return err
		}
	}
	return nil
}

// messages locks the rooms of ms, inserts ms, then moves those rooms'
// counters to cover them.
// roomSeq is a message's key.
type roomSeq struct {
	room string
	seq  int64
}

func (im *pgImporter) messages(ms []parley.Message, counts *bulk.Counts) error {
	if len(ms) == 0 {
		return nil
	}
	var rooms []string
	n := len(ms)
	var (
		roomIDs, ids, senders, names, bodies, clients = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		reactions, replySenders, excerpts, threads    = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		fileLists, mentions                           = make([]string, n), make([]string, n)
		replySeqs                                     = make([]int64, n)
		pinnedBy, pinnedAt, pinChanges                = make([]string, n), make([]*time.Time, n), make([]int64, n)
		seqs, changes                                 = make([]int64, n), make([]int64, n)
		sent                                          = make([]time.Time, n)
		edited, deleted                               = make([]*time.Time, n), make([]*time.Time, n)
	)
	for i := range ms {
		m := &ms[i]
		if len(rooms) == 0 || rooms[len(rooms)-1] != m.RoomID {
			rooms = append(rooms, m.RoomID)
		}
		roomIDs[i], seqs[i], ids[i], senders[i], names[i], bodies[i], clients[i] = m.RoomID, m.Seq, m.ID, m.SenderID, m.SenderName, m.Body, m.ClientID
		sent[i], edited[i], deleted[i], changes[i] = m.SentAt, m.EditedAt, m.DeletedAt, m.Change
		reactions[i] = parley.EncodeReactions(m.Reactions)
		if r := m.ReplyTo; r != nil {
			replySeqs[i], replySenders[i], excerpts[i] = r.Seq, r.SenderName, r.Excerpt
		}
		threads[i] = parley.EncodeThread(m.Thread)
		if p := m.Pinned; p != nil && m.DeletedAt == nil {
			at := p.At
			pinnedBy[i], pinnedAt[i], pinChanges[i] = p.By, &at, p.Change
		}
		fileLists[i], mentions[i] = string(m.Files), string(m.Mentions) // NULL for none, as a send stores it
	}
	slices.Sort(rooms)
	if _, err := im.tx.Exec(im.ctx, `SELECT 1 FROM rooms WHERE id = ANY($1) ORDER BY id FOR UPDATE`, rooms); err != nil {
		return fmt.Errorf("import messages: lock rooms: %w", err)
	}
	rows, err := im.tx.Query(im.ctx, importMessages, roomIDs, seqs, ids, senders, names, bodies, clients, sent, edited, deleted, changes, reactions,
		replySeqs, replySenders, excerpts, threads, pinnedBy, pinnedAt, pinChanges, fileLists, mentions)
	if err != nil {
		return fmt.Errorf("import messages: %w", err)
	}
	wrote := map[roomSeq]bool{}
	var k roomSeq
	_, err = pgx.ForEachRow(rows, []any{&k.room, &k.seq}, func() error {
		wrote[k] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("import messages: %w", err)
	}
	counts.Messages = int64(len(wrote))
	for i := range ms {
		m := &ms[i]
		if wrote[roomSeq{m.RoomID, m.Seq}] {
			continue
		}
		var id string
		err := im.tx.QueryRow(im.ctx, `SELECT id FROM messages WHERE room_id = $1 AND seq = $2`, m.RoomID, m.Seq).Scan(&id)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("import message %d of room %s: %w", m.Seq, m.RoomID, err)
		}
		if id != m.ID {
			return bulk.MessageTaken(m, id)
		}
	}
	// The rooms' counters cover what was written: one row a room.
	var top []parley.Message // each room's highest seq, change and send time written
	for i := range ms {
		m := &ms[i]
		if !wrote[roomSeq{m.RoomID, m.Seq}] {
			continue
		}
		if len(top) == 0 || top[len(top)-1].RoomID != m.RoomID {
			top = append(top, parley.Message{RoomID: m.RoomID})
		}
		t := &top[len(top)-1]
		t.Seq, t.Change = max(t.Seq, m.Seq), max(t.Change, m.Change)
		if m.SentAt.After(t.SentAt) {
			t.SentAt = m.SentAt
		}
	}
	var pb pgx.Batch
	for _, t := range top {
		pb.Queue(`UPDATE rooms SET last_seq = greatest(last_seq, $2), last_change = greatest(last_change, $3),
			last_activity_at = greatest(last_activity_at, $4) WHERE id = $1`, t.RoomID, t.Seq, t.Change, t.SentAt)
	}
	if err := im.tx.SendBatch(im.ctx, &pb).Close(); err != nil {
		return fmt.Errorf("import messages: room counters: %w", err)
	}
	return nil
}

// members inserts ms, then sets their rooms' member_count.
func (im *pgImporter) members(ms []bulk.Member, n *bulk.Counts) error {
	args := make([][]any, 0, len(ms))
	for _, m := range ms {
		args = append(args, []any{m.RoomID, m.UserID, m.ReadSeq, m.JoinedAt, m.Role, m.Notifications})
	}
	wrote, err := im.execAll(importMember, args)
	if err != nil {
		return fmt.Errorf("import members: %w", err)
	}
	n.Members = count(wrote)
	rooms := map[string]bool{}
	for i := range ms {
		m := &ms[i]
		if wrote[i] {
			rooms[m.RoomID] = true
			continue
		}
		var one int
		err := im.tx.QueryRow(im.ctx, `SELECT 1 FROM members WHERE room_id = $1 AND user_id = $2`, m.RoomID, m.UserID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return bulk.SecondOwner(&m.Member)
		}
		if err != nil {
			return fmt.Errorf("import member %s of room %s: %w", m.UserID, m.RoomID, err)
		}
	}
	for id := range rooms {
		var capacity, k int
		err := im.tx.QueryRow(im.ctx, `SELECT capacity, (SELECT count(*) FROM members WHERE room_id = $1) FROM rooms WHERE id = $1 FOR UPDATE`, id).
			Scan(&capacity, &k)
		if err != nil {
			return fmt.Errorf("count members of room %s: %w", id, err)
		}
		if capacity > 0 && k > capacity {
			return bulk.OverCapacity(id, k, capacity)
		}
		if _, err := im.tx.Exec(im.ctx, `UPDATE rooms SET member_count = $1 WHERE id = $2`, k, id); err != nil {
			return fmt.Errorf("count members of room %s: %w", id, err)
		}
	}
	return nil
}
