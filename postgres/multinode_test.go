package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// twoNodes opens two stores on one fresh database, as two Parley nodes
// would, each with its own writers and event sink: the first with two
// writers, small batches and every batch of sends on the path of sends
// only, the second with the defaults.
func twoNodes(t *testing.T) ([2]*postgres.Store, [2]*parleytest.Recorder) {
	dbURL := pgtest.Schema(t)
	recs := [2]*parleytest.Recorder{{}, {}}
	nodes := [2]*postgres.Store{
		mustOpen(t, postgres.Config{URL: dbURL, OnCommit: recs[0].Sink, MaxBatch: 16, Writers: 2}),
		mustOpen(t, postgres.Config{URL: dbURL, OnCommit: recs[1].Sink}),
	}
	postgres.SetMinSendBatch(nodes[0], 1)
	return nodes, recs
}

// TestMultiNodeSeq: two nodes sending to the same rooms at once give each
// room the seqs 1..n, each once, and each node reports its own messages in
// seq order.
func TestMultiNodeSeq(t *testing.T) {
	const nRooms, perNode, nSenders = 3, 600, 12
	nodes, recs := twoNodes(t)
	ctx := context.Background()
	senders := parleytest.MustCreateUsers(t, nodes[0], "sender", nSenders)
	rooms := make([]parley.Room, nRooms)
	for i := range rooms {
		rooms[i] = parleytest.MustCreateRoom(t, nodes[1], senders[0], fmt.Sprintf("room%d", i), 0)
		for _, u := range senders[1:] {
			parleytest.MustJoin(t, nodes[i%2], rooms[i], u)
		}
	}

	var mu sync.Mutex
	seqs := map[string][]int64{}
	var wg sync.WaitGroup
	for n, s := range nodes {
		for i := range perNode {
			wg.Go(func() {
				r, u := rooms[(i+n)%nRooms], senders[i%nSenders]
				m, created, err := s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name,
					Body: fmt.Sprintf("node%d m%d", n, i)})
				if err != nil || !created {
					t.Errorf("node %d: Send(m%d) = %v, %v, want created", n, i, created, err)
					return
				}
				mu.Lock()
				seqs[r.ID] = append(seqs[r.ID], m.Seq)
				mu.Unlock()
			})
		}
	}
	wg.Wait()

	total := 0
	for _, r := range rooms {
		got := seqs[r.ID]
		slices.Sort(got)
		for i, seq := range got {
			if seq != int64(i+1) {
				t.Fatalf("room %s: sorted seqs[%d] = %d, want %d (a hole or a duplicate)", r.Title, i, seq, i+1)
			}
		}
		total += len(got)
		for n, s := range nodes {
			if last := parleytest.MustRoom(t, s, r.ID).LastSeq; last != int64(len(got)) {
				t.Errorf("node %d: Room(%s).LastSeq = %d, want %d", n, r.Title, last, len(got))
			}
		}
		history, err := nodes[1].Messages(ctx, r.ID, parley.Page{After: 0, Limit: parley.MaxPageLimit})
		if err != nil || len(history) == 0 || history[0].Seq != 1 {
			t.Errorf("Messages(%s) = %d messages, %v, want from seq 1", r.Title, len(history), err)
		}
	}
	if total != 2*perNode {
		t.Errorf("%d messages stored, want %d", total, 2*perNode)
	}
	for n, rec := range recs {
		last := map[string]int64{}
		count := 0
		for _, e := range rec.Events() {
			if e.Kind != parley.EventMessage {
				continue
			}
			count++
			if e.Message.Seq <= last[e.Message.RoomID] {
				t.Errorf("node %d: event seq %d after %d in room %s", n, e.Message.Seq, last[e.Message.RoomID], e.Message.RoomID)
			}
			last[e.Message.RoomID] = e.Message.Seq
		}
		if count != perNode {
			t.Errorf("node %d reported %d messages, want its own %d", n, count, perNode)
		}
	}
}

// TestMultiNodeCapacity: joins from two nodes at once never oversell a
// room.
func TestMultiNodeCapacity(t *testing.T) {
	const n, seats = 600, 50
	nodes, _ := twoNodes(t)
	ctx := context.Background()
	owner := parleytest.MustCreateUser(t, nodes[0], "owner")
	room := parleytest.MustCreateRoom(t, nodes[0], owner, "seats", seats+1)
	users := parleytest.MustCreateUsers(t, nodes[1], "fan", n)

	var joined, full atomic.Int64
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			r, ok, err := nodes[i%2].Join(ctx, room.ID, u.ID)
			switch {
			case err == nil && ok:
				joined.Add(1)
				if r.MemberCount > r.Capacity {
					t.Errorf("Join() = %d members, over capacity %d", r.MemberCount, r.Capacity)
				}
			case parley.ErrorCode(err) == parley.CodeRoomFull:
				full.Add(1)
			default:
				t.Errorf("Join(%s) = %v, %v, want joined or room_full", u.Name, ok, err)
			}
		})
	}
	wg.Wait()
	if joined.Load() != seats || full.Load() != n-seats {
		t.Errorf("%d joins from two nodes: %d joined, %d room_full; want %d, %d", n, joined.Load(), full.Load(), seats, n-seats)
	}
	for i, s := range nodes {
		r := parleytest.MustRoom(t, s, room.ID)
		members, err := s.Members(ctx, room.ID)
		if r.MemberCount != seats+1 || err != nil || len(members) != seats+1 {
			t.Errorf("node %d: member_count %d, Members() = %d, %v; want %d", i, r.MemberCount, len(members), err, seats+1)
		}
	}

	// The same user joining through both nodes at once joins once.
	open := parleytest.MustCreateRoom(t, nodes[0], owner, "open", 0)
	var once atomic.Int64
	for _, u := range users[:40] {
		for _, s := range nodes {
			wg.Go(func() {
				_, ok, err := s.Join(ctx, open.ID, u.ID)
				if err != nil {
					t.Errorf("Join(open, %s) error = %v", u.Name, err)
				}
				if ok {
					once.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if got := parleytest.MustRoom(t, nodes[1], open.ID).MemberCount; once.Load() != 40 || got != 41 {
		t.Errorf("40 users joining through both nodes: %d joins, %d members; want 40, 41", once.Load(), got)
	}
}

// TestMultiNodeIdempotency: a client_id repeated through both nodes at once
// stores one message, which every repeat returns.
func TestMultiNodeIdempotency(t *testing.T) {
	const n = 30
	nodes, _ := twoNodes(t)
	ctx := context.Background()
	u := parleytest.MustCreateUser(t, nodes[0], "u")
	room := parleytest.MustCreateRoom(t, nodes[0], u, "r", 0)
	for round := range 5 {
		key := fmt.Sprintf("key%d", round)
		ids := make([]string, 2*n)
		var made atomic.Int64
		var wg sync.WaitGroup
		for i := range 2 * n {
			wg.Go(func() {
				m, created, err := nodes[i%2].Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name,
					Body: "once", ClientID: key})
				if err != nil {
					t.Errorf("Send(%s) error = %v", key, err)
					return
				}
				ids[i] = m.ID
				if created {
					made.Add(1)
				}
			})
		}
		wg.Wait()
		if made.Load() != 1 {
			t.Errorf("round %d: %d sends of one client_id through two nodes created %d messages, want 1", round, 2*n, made.Load())
		}
		for i, id := range ids {
			if id != ids[0] {
				t.Errorf("round %d: send #%d returned %s, want %s", round, i, id, ids[0])
				break
			}
		}
	}
	if got := parleytest.MustRoom(t, nodes[1], room.ID).LastSeq; got != 5 {
		t.Errorf("LastSeq = %d, want 5", got)
	}
}

// TestMultiNodeUniqueRaces: a user name and a direct room asked for through
// both nodes at once exist once.
func TestMultiNodeUniqueRaces(t *testing.T) {
	nodes, _ := twoNodes(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var names [2]atomic.Int64 // created, name_taken
	for i := range 40 {
		wg.Go(func() {
			_, err := nodes[i%2].CreateUser(ctx, parley.NewUser{Name: fmt.Sprintf("name%d", i/2), PasswordHash: []byte("h")})
			switch parley.ErrorCode(err) {
			case "":
				names[0].Add(1)
			case parley.CodeNameTaken:
				names[1].Add(1)
			default:
				t.Errorf("CreateUser() error = %v", err)
			}
		})
	}
	wg.Wait()
	if names[0].Load() != 20 || names[1].Load() != 20 {
		t.Errorf("40 registrations of 20 names: %d created, %d name_taken; want 20, 20", names[0].Load(), names[1].Load())
	}

	users := parleytest.MustCreateUsers(t, nodes[0], "peer", 11)
	rooms := make([]string, 40)
	var created atomic.Int64
	for i := range rooms {
		wg.Go(func() {
			a, b := users[0], users[1+i/4]
			if i%2 == 1 {
				a, b = b, a
			}
			r, ok, err := nodes[(i/2)%2].CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: b.ID})
			if err != nil {
				t.Errorf("CreateRoom(direct) error = %v", err)
				return
			}
			rooms[i] = r.ID
			if ok {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	for i := range rooms {
		if rooms[i] != rooms[i-i%4] {
			t.Errorf("direct room #%d = %s, want %s (one room per pair)", i, rooms[i], rooms[i-i%4])
		}
	}
	if created.Load() != 10 {
		t.Errorf("%d direct rooms created for 10 pairs, want 10", created.Load())
	}
}
