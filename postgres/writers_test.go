package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// With several writers a node's batches commit side by side, and OnCommit
// must still get every room's events in the order of the database: the
// hub, the cluster relay, the hot data in Redis and the caches apply them
// as they come (a room's info from each event, its window from each
// message). These tests hold one writer between its COMMIT and its events
// while another commits a write that depends on it, so that only the
// store's ordering (the sequencer, and the fence around a write that
// crosses shards) can keep the events in order.

// TestWritersDirectRoomOrder: a direct room is created by its pair's writer
// and written by its own; a send into it that another writer commits while
// the room's creation waits to hand its events over comes after them.
func TestWritersDirectRoomOrder(t *testing.T) {
	rec := &parleytest.Recorder{}
	s := mustOpen(t, postgres.Config{URL: pgtest.Schema(t), OnCommit: rec.Sink, Writers: 4})
	ctx := context.Background()
	created := make(chan parley.Room) // the direct room, once committed
	var release chan struct{}         // lets its events go; set before the room is asked for
	sent := make(chan struct{}, 1)    // the send into it committed
	var room atomic.Value             // the id of the room whose sends are watched
	room.Store("")
	postgres.SetAfterCommit(s, func(events []parley.Event) {
		for _, ev := range events {
			switch {
			case ev.Kind == parley.EventRoom && ev.Room.Kind == parley.KindDirect:
				created <- ev.Room
				<-release
				return
			case ev.Kind == parley.EventMessage && ev.Room.ID == room.Load():
				sent <- struct{}{}
				return
			}
		}
	})

	// A pair whose room's writer is not the pair's (each try: 3 in 4).
	for try := range 20 {
		a := parleytest.MustCreateUser(t, s, fmt.Sprintf("a%d", try))
		b := parleytest.MustCreateUser(t, s, fmt.Sprintf("b%d", try))
		release = make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: b.ID})
			done <- err
		}()
		r := <-created
		if postgres.WriterOf(s, r.ID) == postgres.WriterOf(s, r.DirectKey) {
			close(release)
			if err := <-done; err != nil {
				t.Fatalf("CreateRoom() error = %v", err)
			}
			continue
		}
		// The room is committed (a reader would see it) and its events
		// wait: b sends into it through the room's writer.
		room.Store(r.ID)
		sendDone := make(chan error, 1)
		go func() {
			_, _, err := s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: b.ID, SenderName: b.Name, Body: "first"})
			sendDone <- err
		}()
		<-sent
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("CreateRoom() error = %v", err)
		}
		if err := <-sendDone; err != nil {
			t.Fatalf("Send() error = %v", err)
		}
		var kinds []parley.EventKind
		for _, ev := range rec.Events() {
			if ev.Room.ID == r.ID {
				kinds = append(kinds, ev.Kind)
			}
		}
		want := []parley.EventKind{parley.EventRoom, parley.EventJoin, parley.EventJoin, parley.EventMessage}
		if fmt.Sprint(kinds) != fmt.Sprint(want) {
			t.Errorf("events of the direct room = %v, want %v (the room before its first message)", kinds, want)
		}
		return
	}
	t.Fatal("no pair whose direct room has another writer in 20 tries")
}

// TestWritersCrossShardOrder: a direct room's creation that brings a member
// back changes the room through the pair's writer, not the room's. While a
// batch of the room's writer waits for a lock before reaching the room, the
// creation must not overtake it: the creation waits for the batches in
// flight (the fence), so that each event of the room carries a last seq no
// lower than the one before.
func TestWritersCrossShardOrder(t *testing.T) {
	for _, path := range []struct {
		name     string
		minBatch int // postgres.SetMinSendBatch
	}{{"general", 1000}, {"sends only", 1}} {
		t.Run(path.name, func(t *testing.T) {
			testWritersCrossShardOrder(t, path.minBatch)
		})
	}
}

func testWritersCrossShardOrder(t *testing.T, minBatch int) {
	dbURL := pgtest.Schema(t)
	rec := &parleytest.Recorder{}
	s := mustOpen(t, postgres.Config{URL: dbURL, OnCommit: rec.Sink, Writers: 2})
	postgres.SetMinSendBatch(s, minBatch)
	ctx := context.Background()
	back := make(chan struct{}, 1) // the member's come-back committed
	atFence := make(chan struct{}, 1)
	var x parley.Room      // the direct room
	var peer parley.User   // who leaves it and comes back
	var watch atomic.Value // "room user" of the come-back
	watch.Store("")
	postgres.SetAfterCommit(s, func(events []parley.Event) {
		for _, ev := range events {
			if ev.Kind == parley.EventJoin && ev.Room.ID+" "+ev.UserID == watch.Load() {
				back <- struct{}{}
			}
		}
	})
	postgres.SetFenceWait(s, func() { atFence <- struct{}{} })

	side, err := pgx.Connect(ctx, dbURL) // the test's own queries
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { side.Close(context.Background()) })
	before := func(id1, id2 string) bool { // in PostgreSQL's order, which the locks follow
		var less bool
		if err := side.QueryRow(ctx, "SELECT $1::text < $2::text", id1, id2).Scan(&less); err != nil {
			t.Fatal(err)
		}
		return less
	}

	// A direct room x whose writer is not its pair's, and two group rooms
	// of x's writer: w, locked before x (ids in order), and v. Ids are
	// random: x is taken in the upper half of the order, so that a group
	// room sorting before it is found in a few tries.
	owner := parleytest.MustCreateUser(t, s, "owner")
	var a parley.User
	for try := 0; x.ID == ""; try++ {
		if try == 80 {
			t.Fatal("no pair whose direct room has another writer and an id past m in 80 tries")
		}
		a = parleytest.MustCreateUser(t, s, fmt.Sprintf("a%d", try))
		peer = parleytest.MustCreateUser(t, s, fmt.Sprintf("b%d", try))
		r, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: peer.ID})
		if err != nil {
			t.Fatalf("CreateRoom(direct) error = %v", err)
		}
		if postgres.WriterOf(s, r.ID) != postgres.WriterOf(s, r.DirectKey) && before("m", r.ID) {
			x = r
		}
	}
	var v, w parley.Room
	for i := 0; v.ID == "" || w.ID == ""; i++ {
		if i == 200 {
			t.Fatal("no two group rooms of the direct room's writer in 200")
		}
		r := parleytest.MustCreateRoom(t, s, owner, fmt.Sprintf("g%d", i), 0)
		switch {
		case postgres.WriterOf(s, r.ID) != postgres.WriterOf(s, x.ID):
		case w.ID == "" && before(r.ID, x.ID):
			w = r
		case v.ID == "":
			v = r
		}
	}
	parleytest.MustJoin(t, s, w, a)
	parleytest.MustJoin(t, s, v, a)
	parleytest.MustSend(t, s, x, a, "before")
	if _, err := s.Leave(ctx, x.ID, peer.ID); err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	watch.Store(x.ID + " " + peer.ID)

	// Two transactions of the test hold v and w.
	hold := func(r parley.Room) (pgx.Tx, uint32) {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT 1 FROM rooms WHERE id = $1 FOR NO KEY UPDATE", r.ID); err != nil {
			t.Fatal(err)
		}
		return tx, conn.PgConn().PID()
	}
	txV, pidV := hold(v)
	txW, pidW := hold(w)
	blocked := func(pid uint32) { // waits until a backend waits for pid's locks
		t.Helper()
		for {
			var n int
			if err := side.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))", int(pid)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return
			}
			time.Sleep(time.Millisecond) // a poll of the lock table, not a deadline
		}
	}
	errs := make(chan error, 4)
	send := func(r parley.Room, body string) {
		_, _, err := s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: a.ID, SenderName: a.Name, Body: body})
		errs <- err
	}

	// The writer of x waits on v; the sends to w and x queue behind it,
	// then go as one batch that waits on w before it reaches x.
	go send(v, "v")
	blocked(pidV)
	go send(w, "w")
	go send(x, "x")
	for postgres.Queued(s) < 2 {
		time.Sleep(time.Millisecond) // a poll of the queue, not a deadline
	}
	if err := txV.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	blocked(pidW)
	// The peer comes back through the pair's writer: either it waits for
	// the batch in flight, or it commits now, before that batch reaches x.
	go func() {
		_, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: peer.ID})
		errs <- err
	}()
	select {
	case <-atFence:
	case <-back:
	}
	if err := txW.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("write error = %v", err)
		}
	}

	var last int64
	var got []string
	for _, ev := range rec.Events() {
		if ev.Room.ID != x.ID {
			continue
		}
		got = append(got, fmt.Sprintf("%v@%d", ev.Kind, ev.Room.LastSeq))
		if ev.Room.LastSeq < last {
			t.Errorf("an event of the direct room carries last seq %d after one with %d: events %v", ev.Room.LastSeq, last, got)
		}
		last = max(last, ev.Room.LastSeq)
	}
	if _, err := s.Member(ctx, x.ID, peer.ID); err != nil {
		t.Errorf("Member(peer) error = %v, want the peer back", err)
	}
}
