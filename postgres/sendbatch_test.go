package postgres_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// TestSendBatchOutcomes puts sends of every outcome into one batch, on
// the path of sends only and on the general path, and checks that each
// gets the outcome a send alone would: a repeat of a client id stored
// before returns the original, a repeat within the batch the batch's
// first, an empty sender name is looked up, a non-member is refused
// without a hole in the seqs, the read positions follow the senders' last
// messages and the events come in seq order.
func TestSendBatchOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		minBatch int
		stranger bool // a non-member's send in the batch
	}{
		{"sends only", 1, false},
		{"sends only, a non-member", 1, true},
		{"general", 1 << 30, false},
		{"general, a non-member", 1 << 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testSendBatchOutcomes(t, tc.minBatch, tc.stranger)
		})
	}
}

func testSendBatchOutcomes(t *testing.T, minBatch int, stranger bool) {
	ctx := context.Background()
	dbURL := pgtest.Schema(t)
	var rec parleytest.Recorder
	reg := prometheus.NewRegistry()
	s := mustOpen(t, postgres.Config{URL: dbURL, OnCommit: rec.Sink, Registerer: reg})
	postgres.SetMinSendBatch(s, minBatch)
	users := parleytest.MustCreateUsers(t, s, "u", 3)
	alice, bob, carol := users[0], users[1], users[2]
	room := parleytest.MustCreateRoom(t, s, alice, "room", 0)
	other := parleytest.MustCreateRoom(t, s, carol, "other", 0)
	parleytest.MustJoin(t, s, room, bob)
	stored, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: alice.ID, SenderName: alice.Name, Body: "k0", ClientID: "k0"})
	if err != nil {
		t.Fatal(err)
	}

	// Hold the room's row, so that the writer's next batch (the blocker)
	// waits for it while the sends under test queue behind it.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE", room.ID); err != nil {
		t.Fatal(err)
	}
	type sent struct {
		msg     parley.Message
		created bool
		err     error
	}
	send := func(m parley.NewMessage) chan sent {
		c := make(chan sent, 1)
		go func() {
			msg, created, err := s.Send(ctx, m)
			c <- sent{msg, created, err}
		}()
		return c
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		parleytest.Eventually(t, 10*time.Second, cond, "timed out waiting for %s", what)
	}
	// Watched from a connection of its own: inside tx, pg_stat_activity
	// is a snapshot taken at its first read and kept to the transaction's
	// end, which never shows a writer connection opened after it.
	watch, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	blocker := send(parley.NewMessage{RoomID: room.ID, SenderID: bob.ID, SenderName: bob.Name, Body: "blocker"})
	waitFor("the blocker to wait for the room's lock", func() bool {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE $1::int = ANY (pg_blocking_pids(pid))`, conn.PgConn().PID()).Scan(&n)
		return err == nil && n > 0
	})

	batch := []parley.NewMessage{
		{RoomID: room.ID, SenderID: alice.ID, SenderName: alice.Name, Body: "k0 again", ClientID: "k0"}, // 0: stored before
		{RoomID: room.ID, SenderID: bob.ID, SenderName: bob.Name, Body: "k1", ClientID: "k1"},           // 1: new
		{RoomID: room.ID, SenderID: bob.ID, SenderName: bob.Name, Body: "k1 again", ClientID: "k1"},     // 2: repeat of 1
		{RoomID: room.ID, SenderID: alice.ID, Body: "no name"},                                          // 3: name looked up
		{RoomID: other.ID, SenderID: carol.ID, SenderName: carol.Name, Body: "elsewhere"},               // 4: another room
		{RoomID: room.ID, SenderID: alice.ID, SenderName: alice.Name, Body: "last"},                     // 5: new
	}
	if stranger {
		batch = append(batch, parley.NewMessage{RoomID: room.ID, SenderID: carol.ID, SenderName: carol.Name, Body: "let me in"})
	}
	results := make([]chan sent, len(batch))
	for i, m := range batch {
		results[i] = send(m)
		waitFor(fmt.Sprintf("send %d to queue", i), func() bool { return postgres.Queued(s) == i+1 })
	}
	before := queryKinds(t, reg)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-blocker; r.err != nil || r.msg.Seq != 2 {
		t.Fatalf("blocker: seq %d, %v, want seq 2", r.msg.Seq, r.err)
	}
	got := make([]sent, len(batch))
	for i, c := range results {
		got[i] = <-c
	}

	want := []struct {
		seq     int64
		created bool
		name    string
		id      string // "" for a new message
	}{
		{1, false, alice.Name, stored.ID},
		{3, true, bob.Name, ""},
		{3, false, bob.Name, "same as 1"},
		{4, true, alice.Name, ""},
		{1, true, carol.Name, ""},
		{5, true, alice.Name, ""},
	}
	for i, w := range want {
		g := got[i]
		if g.err != nil || g.msg.Seq != w.seq || g.created != w.created || g.msg.SenderName != w.name {
			t.Errorf("send %d (%s) = seq %d, created %v, name %q, %v; want seq %d, created %v, name %q",
				i, batch[i].Body, g.msg.Seq, g.created, g.msg.SenderName, g.err, w.seq, w.created, w.name)
		}
		switch w.id {
		case "":
			if g.msg.Body != batch[i].Body || g.msg.RoomID != batch[i].RoomID || g.msg.ID == "" {
				t.Errorf("send %d = %+v, want the message sent", i, g.msg)
			}
		case "same as 1":
			if !reflect.DeepEqual(g.msg, got[1].msg) {
				t.Errorf("send %d = %+v, want send 1's %+v", i, g.msg, got[1].msg)
			}
		default:
			if g.msg.ID != w.id || g.msg.Body != stored.Body {
				t.Errorf("send %d = %+v, want the stored %+v", i, g.msg, stored)
			}
		}
	}
	if stranger {
		if g := got[len(batch)-1]; parley.ErrorCode(g.err) != parley.CodeForbidden {
			t.Errorf("non-member's send = seq %d, %v, want forbidden", g.msg.Seq, g.err)
		}
	}

	if r := parleytest.MustRoom(t, s, room.ID); r.LastSeq != 5 {
		t.Errorf("room's LastSeq = %d, want 5", r.LastSeq)
	}
	history, err := s.Messages(ctx, room.ID, parley.Page{After: 0, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{}
	for _, m := range history {
		bodies = append(bodies, fmt.Sprintf("%d %s %s", m.Seq, m.SenderName, m.Body))
	}
	wantBodies := fmt.Sprint([]string{"1 u0 k0", "2 u1 blocker", "3 u1 k1", "4 u0 no name", "5 u0 last"})
	if fmt.Sprint(bodies) != wantBodies {
		t.Errorf("history = %v, want %v", bodies, wantBodies)
	}
	for _, w := range []struct {
		user parley.User
		read int64
	}{{alice, 5}, {bob, 3}} {
		m, err := s.Member(ctx, room.ID, w.user.ID)
		if err != nil || m.ReadSeq != w.read {
			t.Errorf("Member(%s).ReadSeq = %d, %v, want %d", w.user.Name, m.ReadSeq, err, w.read)
		}
	}
	var seqs []string
	for _, e := range rec.Events() {
		if e.Kind == parley.EventMessage {
			seqs = append(seqs, fmt.Sprintf("%s:%d/%d", e.Room.Title, e.Message.Seq, e.Room.LastSeq))
		}
	}
	if want := "[room:1/1 room:2/2 room:3/3 room:4/4 other:1/1 room:5/5]"; fmt.Sprint(seqs) != want {
		t.Errorf("message events (room:seq/room's last seq) = %v, want %v", seqs, want)
	}
	// The path each batch took: the blocker's, then the batch's.
	after := queryKinds(t, reg)
	delta := func(kind string) float64 { return after[kind] - before[kind] }
	wantInserts, wantRuns, wantRollbacks := 2.0, 0.0, 0.0
	switch {
	case minBatch > len(batch):
		wantInserts, wantRuns = 0, 1
	case stranger: // the batch tried, then the general path
		wantInserts, wantRuns, wantRollbacks = 1, 1, 1
	}
	if delta("insert_messages") != wantInserts || delta("send_batch") != wantRuns || delta("rollback") != wantRollbacks {
		t.Errorf("queries insert_messages %v, send_batch %v, rollback %v, want %v, %v, %v",
			delta("insert_messages"), delta("send_batch"), delta("rollback"), wantInserts, wantRuns, wantRollbacks)
	}

	// The indexer stores the search vector of each new message.
	if err := s.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := s.SearchRoom(ctx, room.ID, parley.Query{Terms: []string{"last"}}, 0, 10)
	if err != nil || len(hits) != 1 || hits[0].Seq != 5 {
		t.Errorf("SearchRoom(last) = %d messages, %v, want seq 5", len(hits), err)
	}
}

// queryKinds returns parley_store_queries_total by kind.
func queryKinds(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	kinds := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "parley_store_queries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					kinds[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return kinds
}
