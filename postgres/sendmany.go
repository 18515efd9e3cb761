package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// A run of sends in a batch (the usual batch is all sends) goes to
// PostgreSQL as one set-based statement (writeQueries.sendMany) instead of
// one statement each: one plan, one INSERT of every message, one UPDATE of
// each room's last_seq. Its outcome for each send is the one the send's own
// statement would have had.

// queueSends adds the statement of the sends ops to the batch, giving each
// its time from now.
func queueSends(b *pgx.Batch, q *writeQueries, ops []*send, now func() time.Time) {
	n := len(ops)
	rooms, senders, names := make([]string, n), make([]string, n), make([]string, n)
	bodies, clientIDs, ids := make([]string, n), make([]string, n), make([]string, n)
	times, files, mentions := make([]time.Time, n), make([]string, n), make([]string, n)
	for i, o := range ops {
		o.setMessage(now())
		rooms[i], senders[i], names[i] = o.m.RoomID, o.m.SenderID, o.m.SenderName
		bodies[i], clientIDs[i], ids[i], times[i] = o.m.Body, o.m.ClientID, o.msg.ID, o.msg.SentAt
		files[i], mentions[i] = string(o.m.Files), string(o.m.Mentions)
	}
	q.sendMany.count()
	b.Queue(q.sendMany.text, rooms, senders, names, bodies, clientIDs, ids, times, files, mentions)
}

// decodeSends reads the result of queueSends: one row per send, in order.
// It returns each send's outcome and the events, in order; an error is the
// statement's.
func decodeSends(br pgx.BatchResults, ops []*send) ([]outcome, []parley.Event, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	outs := make([]outcome, 0, len(ops))
	var events []parley.Event
	rooms := map[string]*parley.Room{} // each room as it stands after the sends so far
	type key struct{ room, sender, clientID string }
	first := map[key]parley.Message{} // the message of each client id of the run
	for rows.Next() {
		if len(outs) == len(ops) {
			break // cannot happen: one row per send
		}
		o := ops[len(outs)]
		var senderOK, roomOK, memberOK bool
		var seq int64
		var name string
		old := parley.Message{RoomID: o.m.RoomID, SenderID: o.m.SenderID, ClientID: o.m.ClientID}
		var r parley.Room
		dest := append([]any{&senderOK, &roomOK, &memberOK, &seq, &name,
			&old.ID, &old.Seq, &old.SenderName, &old.Body, &old.SentAt, &old.EditedAt, &old.DeletedAt, &old.Change, (*string)(&old.Files)}, roomDest(&r)...)
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, err
		}
		k := key{o.m.RoomID, o.m.SenderID, o.m.ClientID}
		var out outcome
		switch {
		case old.ID != "": // a repeat of a client id stored before
			fixMessage(&old)
			out.res.msg = old
		case !senderOK:
			out.err = errUserNotFound(o.m.SenderID)
		case !roomOK:
			out.err = errRoomNotFound(o.m.RoomID)
		case !memberOK:
			out.err = errNotMember()
		case seq == 0: // a repeat of a client id earlier in the run
			out.res.msg = first[k]
		default:
			msg := o.msg
			msg.Seq, msg.SenderName = seq, name
			room := rooms[msg.RoomID]
			if room == nil {
				fixRoom(&r)
				room = &r
				rooms[msg.RoomID] = room
			}
			room.LastSeq = seq
			if msg.SentAt.After(room.LastActivityAt) {
				room.LastActivityAt = msg.SentAt
			}
			if msg.ClientID != "" {
				first[k] = msg
			}
			out.res = result{msg: msg, ok: true}
			events = append(events, parley.Event{Kind: parley.EventMessage, Room: *room, UserID: msg.SenderID, Message: msg})
		}
		outs = append(outs, out)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if len(outs) != len(ops) {
		return nil, nil, errShortResult
	}
	return outs, events, nil
}
