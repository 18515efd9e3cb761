package sqlite

import (
	"cmp"
	"database/sql"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"parley"
	"parley/groupcommit"
)

// Sends are the hot write. The writer runs consecutive Sends of a batch as
// one group, with a few statements for the whole group instead of three
// per message:
//
//  1. each repeat of a client_id is answered from the unique index (which
//     sees the earlier groups of the transaction), one grouped SELECT per
//     chunk of keys, or from the group itself;
//  2. one UPDATE rooms ... FROM (VALUES ...) RETURNING per chunk of rooms
//     moves each room's last_seq by its number of messages; the seqs of a
//     room's messages are the range that ends at the returned last_seq, in
//     the order of the calls;
//  3. one multi-row INSERT per chunk of messages;
//  4. one UPDATE members ... FROM (VALUES ...) per chunk of (room, sender)
//     moves each sender's read position to their last message.
//
// A statement of a group fails as a whole, so when one breaks a constraint
// the batch is run again with groups of one Send each, which finds the
// culprit (see Store.commit).

// sendReq is a Send request of the writer.
type sendReq = groupcommit.Request[writeOp, result]

// clientKey identifies a message by its idempotency key.
type clientKey struct{ room, sender, client string }

// sendItem is a new message of a group.
type sendItem struct {
	r   *sendReq
	m   parley.NewMessage
	now int64
	msg parley.Message
	key int64 // its full-text key, ftsKey(room num, seq)
	ok  bool  // its room exists: it is stored
}

// roomBump is a room of a group and how far its seq moves.
type roomBump struct {
	n     int   // messages in the group
	last  int64 // time of the last one
	room  parley.Room
	num   int64 // the room's number (rooms.num)
	found bool
	next  int64 // the seq of the room's next message while assigning
}

// flushSends stores the group of Sends and sets their results, in the
// steps of the comment above. It returns an error only when a statement
// failed: the transaction must then be rolled back.
func (w *wtx) flushSends(group []*sendReq) error {
	items, repeats, err := w.newItems(group)
	if err != nil {
		return err
	}
	// Only members post: the caller checked, but a leave may have
	// committed since, in an earlier batch or earlier in this one.
	if items, err = w.membersOnly(items); err != nil {
		return fmt.Errorf("send: members: %w", err)
	}
	bumps, err := w.bumpRooms(items)
	if err != nil {
		return fmt.Errorf("send: next seq: %w", err)
	}
	stored, err := number(items, bumps)
	if err != nil {
		return err
	}
	// Stored in key order: each room's messages in a run (one leaf of
	// the table after another). The full-text index is the indexer's,
	// after the commit (indexer.go).
	byKey := slices.Clone(stored)
	slices.SortFunc(byKey, func(a, b *sendItem) int { return cmp.Compare(a.key, b.key) })
	if err := w.insertMessages(byKey); err != nil {
		return fmt.Errorf("send: insert messages: %w", err)
	}
	w.noteSent(stored) // for the search indexer (indexer.go)
	if err := w.senderReads(stored); err != nil {
		return fmt.Errorf("send: sender read: %w", err)
	}
	// Results and events, in call order: each message's room is the room
	// as that message left it.
	for _, it := range stored {
		b := bumps[it.msg.RoomID]
		r := b.room
		r.LastSeq = it.msg.Seq
		if r.LastActivityAt.Equal(fromMicro(b.last)) { // else a stored time is ahead of the clock
			r.LastActivityAt = it.msg.SentAt
		}
		it.r.Out, it.r.Err = result{msg: it.msg, ok: true}, nil
		w.emit(parley.Event{Kind: parley.EventMessage, Room: r, UserID: it.msg.SenderID, Message: it.msg})
	}
	for _, rp := range repeats {
		rp[0].Out, rp[0].Err = result{msg: rp[1].Out.msg}, rp[1].Err
	}
	return nil
}

// newItems is step 1: it answers each Send whose client_id was stored
// before, pairs each repeat within the group with its first Send, fails the
// Sends of unknown senders, and returns the new messages.
func (w *wtx) newItems(group []*sendReq) (items []sendItem, repeats [][2]*sendReq, err error) {
	stored, err := w.clientMessages(group)
	if err != nil {
		return nil, nil, fmt.Errorf("send: %w", err)
	}
	items = make([]sendItem, 0, len(group))
	var keys map[clientKey]*sendReq // first Send of each client_id in the group
	for _, r := range group {
		m := *r.In.send
		if m.ClientID != "" {
			k := clientKey{m.RoomID, m.SenderID, m.ClientID}
			if first, ok := keys[k]; ok {
				repeats = append(repeats, [2]*sendReq{r, first})
				continue
			}
			if old, ok := stored[k]; ok {
				r.Out, r.Err = result{msg: old}, nil
				continue
			}
			if keys == nil {
				keys = make(map[clientKey]*sendReq)
			}
			keys[k] = r
		}
		if m.SenderName == "" {
			name, err := w.userName(m.SenderID)
			var pe *parley.Error
			if errors.As(err, &pe) {
				r.Out, r.Err = result{}, err
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("send: %w", err)
			}
			m.SenderName = name
		}
		items = append(items, sendItem{r: r, m: m, now: w.now()})
	}
	return items, repeats, nil
}

// clientMessages returns the stored messages of the group's client_ids,
// with one grouped statement per chunk of distinct keys. The index it reads
// sees the earlier groups of the transaction.
func (w *wtx) clientMessages(group []*sendReq) (map[clientKey]parley.Message, error) {
	var ks []clientKey
	var seen map[clientKey]bool
	for _, r := range group {
		if m := r.In.send; m.ClientID != "" {
			k := clientKey{m.RoomID, m.SenderID, m.ClientID}
			if !seen[k] {
				if seen == nil {
					seen = make(map[clientKey]bool)
				}
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	if len(ks) == 0 {
		return nil, nil
	}
	stored := make(map[clientKey]parley.Message)
	err := chunks(len(ks), func(start, size, qi int) error {
		args := w.args[:0]
		for _, k := range ks[start : start+size] {
			args = append(args, k.room, k.sender, k.client)
		}
		w.args = args
		rows, err := w.stmt(w.s.wq.clientMessages[qi]).Query(args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanMessage(rows)
			if err != nil {
				return err
			}
			stored[clientKey{m.RoomID, m.SenderID, m.ClientID}] = m
		}
		return rows.Err()
	})
	return stored, err
}

// bumpRooms is step 2: it moves each room's last_seq once by its number of
// messages and returns the rooms by id (found false for an unknown room).
func (w *wtx) bumpRooms(items []sendItem) (map[string]*roomBump, error) {
	var rooms []string // in order of first appearance
	bumps := make(map[string]*roomBump)
	for _, it := range items {
		b := bumps[it.m.RoomID]
		if b == nil {
			b = &roomBump{}
			bumps[it.m.RoomID] = b
			rooms = append(rooms, it.m.RoomID)
		}
		b.n++
		b.last = it.now
	}
	err := chunks(len(rooms), func(start, size, qi int) error {
		args := w.args[:0]
		for _, id := range rooms[start : start+size] {
			args = append(args, id, bumps[id].n, bumps[id].last)
		}
		w.args = args
		rows, err := w.stmt(w.s.wq.nextSeqs[qi]).Query(args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r parley.Room
			var at, created, num int64
			if err := rows.Scan(append(roomDest(&r, &at, &created), &num)...); err != nil {
				return err
			}
			fixRoom(&r, at, created)
			b := bumps[r.ID]
			b.room, b.num, b.found, b.next = r, num, true, r.LastSeq-int64(b.n)+1
		}
		return rows.Err()
	})
	return bumps, err
}

// number gives each message of an existing room its seq and id, in call
// order, fails those of unknown rooms, and returns the messages to store.
// It fails (the batch) for a seq past the 2^36 of a room that keys and ids
// hold.
func number(items []sendItem, bumps map[string]*roomBump) ([]*sendItem, error) {
	stored := make([]*sendItem, 0, len(items))
	for i := range items {
		it := &items[i]
		b := bumps[it.m.RoomID]
		if !b.found {
			it.r.Out, it.r.Err = result{}, errRoomNotFound(it.m.RoomID)
			continue
		}
		if b.next >= 1<<36 {
			return nil, fmt.Errorf("send: room %s has run out of seqs", it.m.RoomID)
		}
		it.ok, it.key = true, ftsKey(b.num, b.next)
		it.msg = parley.Message{
			ID: messageID(b.num, b.next), RoomID: it.m.RoomID, Seq: b.next, SenderID: it.m.SenderID,
			SenderName: it.m.SenderName, Body: it.m.Body, ClientID: it.m.ClientID, SentAt: fromMicro(it.now),
			Files: it.m.Files, Mentions: it.m.Mentions,
		}
		b.next++
		stored = append(stored, it)
	}
	return stored, nil
}

// insertMessages is step 3: one multi-row INSERT per chunk of messages.
func (w *wtx) insertMessages(stored []*sendItem) error {
	return chunks(len(stored), func(start, size, qi int) error {
		args := w.args[:0]
		for _, it := range stored[start : start+size] {
			m := &it.msg
			args = append(args, m.ID, m.RoomID, m.Seq, m.SenderID, m.SenderName, m.Body, m.ClientID, it.now, filesJSON(m.Files), mentionsText(m.Mentions))
		}
		w.args = args
		_, err := w.stmt(w.s.wq.insertMessages[qi]).Exec(args...)
		return err
	})
}

// senderReads is step 4: each sender has read up to their last message.
func (w *wtx) senderReads(stored []*sendItem) error {
	type reader struct{ room, user string }
	readTo := make(map[reader]int64, len(stored))
	var readers []reader
	for _, it := range stored {
		k := reader{it.msg.RoomID, it.msg.SenderID}
		if _, ok := readTo[k]; !ok {
			readers = append(readers, k)
		}
		readTo[k] = it.msg.Seq
	}
	return chunks(len(readers), func(start, size, qi int) error {
		args := w.args[:0]
		for _, k := range readers[start : start+size] {
			args = append(args, k.room, k.user, readTo[k])
		}
		w.args = args
		_, err := w.stmt(w.s.wq.senderReads[qi]).Exec(args...)
		return err
	})
}

// membersOnly returns the items whose sender is a member of their room,
// with one grouped statement per chunk of (room, sender) pairs, and
// refuses the others with CodeForbidden.
func (w *wtx) membersOnly(items []sendItem) ([]sendItem, error) {
	type pair struct{ room, user string }
	is := make(map[pair]bool, len(items)) // pair -> a member
	var pairs []pair
	for _, it := range items {
		p := pair{it.m.RoomID, it.m.SenderID}
		if _, ok := is[p]; !ok {
			is[p] = false
			pairs = append(pairs, p)
		}
	}
	err := chunks(len(pairs), func(start, size, qi int) error {
		args := w.args[:0]
		for _, p := range pairs[start : start+size] {
			args = append(args, p.room, p.user)
		}
		w.args = args
		rows, err := w.stmt(w.s.wq.senderMembers[qi]).Query(args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p pair
			if err := rows.Scan(&p.room, &p.user); err != nil {
				return err
			}
			is[p] = true
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	kept := items[:0]
	for _, it := range items {
		if is[pair{it.m.RoomID, it.m.SenderID}] {
			kept = append(kept, it)
			continue
		}
		// The rare path: say why, as the statements would have.
		if _, err := scanRoom(w.row(w.s.wq.room, it.m.RoomID)); errors.Is(err, sql.ErrNoRows) {
			it.r.Out, it.r.Err = result{}, errRoomNotFound(it.m.RoomID)
		} else if err != nil {
			return nil, err
		} else if _, err := w.userName(it.m.SenderID); err != nil {
			var pe *parley.Error
			if !errors.As(err, &pe) {
				return nil, err
			}
			it.r.Out, it.r.Err = result{}, err // an unknown sender: not_found, as PostgreSQL says
		} else {
			it.r.Out, it.r.Err = result{}, parley.Errorf(parley.CodeForbidden, "not a member of this room")
		}
	}
	return kept, nil
}

// chunks splits n rows into chunks of chunkSizes and calls f for each with
// its start, size and the index of its size in chunkSizes.
func chunks(n int, f func(start, size, qi int) error) error {
	start := 0
	for qi, size := range chunkSizes {
		for n-start >= size {
			if err := f(start, size, qi); err != nil {
				return err
			}
			start += size
		}
	}
	return nil
}

// messageID returns the id of message seq of room number num: its
// full-text key num << 36 | seq as 13 base32 characters (migration 0005).
// The primary key (room_id, seq) makes it unique, with no index of its
// own; the ids of messages stored before 0005 have 26 characters, so no
// derived id is ever one of them.
func messageID(num, seq int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(ftsKey(num, seq)))
	return idEncoding.EncodeToString(b[:])
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
