package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/sqlite"
	"parley/webhook"
)

// TestRoomEventsStored: every membership change and room change stores
// exactly one member or room event, numbered on from the room's counter
// in the change's own transaction; a refused change (a full room, a ban,
// a second join) stores none.
func TestRoomEventsStored(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		users := map[string]parley.User{}
		for _, name := range []string{"alice", "bob", "carol", "dave"} {
			u, err := st.CreateUser(ctx, parley.NewUser{Name: name, PasswordHash: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			users[name] = u
		}
		id := func(name string) string { return users[name].ID }
		must := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		refused := func(what string, err error, code string) {
			t.Helper()
			if parley.ErrorCode(err) != code {
				t.Fatalf("%s: %v, want %s", what, err, code)
			}
		}
		r, _, err := st.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: "Team", Capacity: 3, CreatorID: id("alice")})
		must("create", err)
		_, _, err = st.Join(ctx, r.ID, id("bob"))
		must("bob joins", err)
		_, _, err = st.Join(ctx, r.ID, id("bob"))
		must("bob joins again", err)
		_, _, err = st.Join(ctx, r.ID, id("carol"))
		must("carol joins", err)
		_, _, err = st.Join(ctx, r.ID, id("dave"))
		refused("dave joins a full room", err, parley.CodeRoomFull)
		_, err = st.SetRole(ctx, r.ID, id("alice"), id("bob"), parley.RoleAdmin)
		must("bob made admin", err)
		title, capacity := "Team B", 5
		_, err = st.UpdateRoom(ctx, r.ID, id("alice"), parley.RoomUpdate{Title: &title, Capacity: &capacity})
		must("update", err)
		_, err = st.RemoveMember(ctx, r.ID, id("alice"), id("carol"), true)
		must("carol banned", err)
		_, _, err = st.Join(ctx, r.ID, id("carol"))
		refused("banned carol joins", err, parley.CodeForbidden)
		_, _, err = st.Join(ctx, r.ID, id("dave"))
		must("dave joins", err)
		_, err = st.RemoveMember(ctx, r.ID, id("bob"), id("dave"), false)
		must("bob removes dave", err)
		_, err = st.Leave(ctx, r.ID, id("alice"))
		must("alice leaves", err)

		want := []string{
			"1 room.created  - Team 1",
			"2 member.joined alice owner - Team 1",
			"3 member.joined bob member - Team 2",
			"4 member.joined carol member - Team 3",
			"5 member.role bob admin alice Team 3",
			"6 room.updated  alice Team B 3",
			"7 member.banned carol member alice Team B 2",
			"8 member.joined dave member - Team B 3",
			"9 member.removed dave member bob Team B 2",
			"10 member.left alice owner - Team B 1",
			"11 member.role bob owner - Team B 1",
		}
		names := map[string]string{}
		for n, u := range users {
			names[u.ID] = n
		}
		show := func(evs []parley.RoomEvent) []string {
			var got []string
			for _, e := range evs {
				actor := "-"
				if e.ActorID != "" {
					actor = names[e.ActorID]
				}
				who := ""
				if e.Member.UserID != "" {
					who = names[e.Member.UserID] + " " + e.Member.Role
					if e.Member.Name != names[e.Member.UserID] || e.Member.JoinedAt.IsZero() {
						t.Errorf("event %d: member %+v, want its name and join time", e.N, e.Member)
					}
				}
				if e.Room.ID != r.ID || e.Room.Kind != parley.KindGroup || e.At.IsZero() {
					t.Errorf("event %d: room %+v at %v", e.N, e.Room, e.At)
				}
				got = append(got, fmt.Sprintf("%d %s %s %s %s %d", e.N, e.Kind, who, actor, e.Room.Title, e.Room.MemberCount))
			}
			return got
		}
		evs, err := st.RoomEvents(ctx, r.ID, 0, 0)
		must("room events", err)
		if got := show(evs); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("room events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if evs, err := st.RoomEvents(ctx, r.ID, 9, 1); err != nil || len(evs) != 1 || evs[0].N != 10 {
			t.Errorf("RoomEvents after 9, limit 1 = %+v, %v", evs, err)
		}

		// A direct room: made, left, made again (its member back).
		d, _, err := st.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: id("alice"), PeerID: id("dave")})
		must("direct", err)
		_, err = st.Leave(ctx, d.ID, id("dave"))
		must("dave leaves the direct room", err)
		_, _, err = st.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: id("alice"), PeerID: id("dave")})
		must("direct again", err)
		evs, err = st.RoomEvents(ctx, d.ID, 0, 0)
		must("direct room events", err)
		var got []string
		for _, e := range evs {
			got = append(got, fmt.Sprintf("%d %s %s %d", e.N, e.Kind, names[e.Member.UserID], e.Room.MemberCount))
		}
		if w := "1 room.created  2|2 member.joined alice 2|3 member.joined dave 2|4 member.left dave 1|5 member.joined dave 2"; strings.Join(got, "|") != w {
			t.Errorf("direct room events %s, want %s", strings.Join(got, "|"), w)
		}

		// The counters: a webhook added now is at them, one added before
		// sees the room's last event.
		h, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "late", URL: "http://127.0.0.1/", Secret: "s", Kinds: parley.HookKinds})
		must("webhook", err)
		ps, err := st.HookPositions(ctx, h)
		must("positions", err)
		if len(ps) != 0 {
			t.Errorf("a new webhook is behind in %+v", ps)
		}
		_, _, err = st.Join(ctx, r.ID, id("dave"))
		must("dave joins again", err)
		ps, err = st.HookPositions(ctx, h)
		must("positions", err)
		if len(ps) != 1 || ps[0].RoomID != r.ID || ps[0].Event != 11 || ps[0].LastEvent != 12 || ps[0].LastSeq != ps[0].Seq {
			t.Errorf("positions after a join %+v, want the room's event 11 of 12", ps)
		}
	})
}

// fillWithBob makes alice and her rooms (fill) and a second user, bob,
// and returns alice's first room.
func fillWithBob(t *testing.T, st hookStore) (alice, bob parley.User, r parley.Room) {
	t.Helper()
	alice, rooms := fill(t, st)
	bob, err := st.CreateUser(context.Background(), parley.NewUser{Name: "bob", PasswordHash: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	return alice, bob, rooms[0]
}

// TestMemberEventsDelivered: a receiver gets the member and room events
// with the messages, in the room's order, each once, each with its data
// as the API shows it; a webhook that does not want a kind moves past it.
func TestMemberEventsDelivered(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		alice, bob, r := fillWithBob(t, st)
		rcv, srv := newReceiver(t, "whsec_test_secret_3", 2)
		if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "all", URL: srv.URL, Secret: "whsec_test_secret_3",
			Kinds: parley.HookKinds, RoomID: r.ID}); err != nil {
			t.Fatal(err)
		}
		m := startManager(t, st, "n1", 1000)
		defer m.Close()
		send := func(u parley.User, body string) int64 {
			t.Helper()
			msg, _, err := st.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: body})
			if err != nil {
				t.Fatal(err)
			}
			return msg.Seq
		}
		s1 := send(alice, "hello")
		if _, _, err := st.Join(ctx, r.ID, bob.ID); err != nil {
			t.Fatal(err)
		}
		s2 := send(bob, "hi")
		title := "renamed"
		if _, err := st.UpdateRoom(ctx, r.ID, alice.ID, parley.RoomUpdate{Title: &title}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Leave(ctx, r.ID, bob.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Join(ctx, r.ID, bob.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RemoveMember(ctx, r.ID, alice.ID, bob.ID, true); err != nil {
			t.Fatal(err)
		}
		s3 := send(alice, "bye")
		id := func(n int64) string { return webhook.EventID(r.ID, n) }
		order := []string{webhook.SendID(r.ID, s1), id(3), webhook.SendID(r.ID, s2), id(4), id(5), id(6), id(7), webhook.SendID(r.ID, s3)}
		want := map[string]bool{}
		for _, o := range order {
			want[o] = true
		}
		got := rcv.await(t, want)
		seen := map[string]bool{}
		var ids, kinds []string
		for _, d := range got {
			if !seen[d.ID] {
				seen[d.ID] = true
				ids = append(ids, d.ID)
				kinds = append(kinds, d.Type)
			}
		}
		if strings.Join(ids, " ") != strings.Join(order, " ") {
			t.Errorf("delivered %v\nwant %v", ids, order)
		}
		if w := "message.sent member.joined message.sent room.updated member.left member.joined member.banned message.sent"; strings.Join(kinds, " ") != w {
			t.Errorf("kinds %v, want %s", kinds, w)
		}
		for _, d := range got {
			switch d.Type {
			case parley.HookMemberBanned:
				var mem struct {
					User struct{ ID, Name string }
					Role string
				}
				if err := json.Unmarshal(d.Data, &mem); err != nil || mem.User.ID != bob.ID || mem.User.Name != "bob" || mem.Role != "member" ||
					d.Actor != alice.ID || d.Event != 7 {
					t.Errorf("member.banned data %s", d.Data)
				}
			case parley.HookRoomUpdated:
				var room parley.Room
				if err := json.Unmarshal(d.Data, &room); err != nil || room.ID != r.ID || room.Title != "renamed" || d.Actor != alice.ID {
					t.Errorf("room.updated data %s", d.Data)
				}
			}
		}
		if rcv.bad != 0 {
			t.Errorf("%d deliveries failed the signature check", rcv.bad)
		}
	})
}

// TestExpireRoomEvents: the stored member and room events go by the
// messages' age rule: the room's own retention, else the server's, none
// when both are 0.
func TestExpireRoomEvents(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		u, rooms := fill(t, st) // two rooms, two events each
		keep := int64(3600)
		if _, err := st.UpdateRoom(ctx, rooms[1].ID, u.ID, parley.RoomUpdate{RetentionSeconds: &keep}); err != nil {
			t.Fatal(err)
		}
		ee := st.(parley.EventExpiry)
		later := time.Now().Add(2 * time.Hour)
		count := func(r parley.Room) int {
			evs, err := st.RoomEvents(ctx, r.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			return len(evs)
		}
		if n, err := ee.ExpireRoomEvents(ctx, later, 0, 100); err != nil || n != 3 || count(rooms[0]) != 2 || count(rooms[1]) != 0 {
			t.Errorf("expire without a default: %d, %v; left %d and %d, want 3 deleted, those of the room with its own retention",
				n, err, count(rooms[0]), count(rooms[1]))
		}
		if n, err := ee.ExpireRoomEvents(ctx, later, 3*time.Hour, 100); err != nil || n != 0 {
			t.Errorf("expire with a longer default: %d, %v, want none", n, err)
		}
		if n, err := ee.ExpireRoomEvents(ctx, later, time.Hour, 1); err != nil || n != 1 || count(rooms[0]) != 1 {
			t.Errorf("expire with a default, limit 1: %d, %v, want 1", n, err)
		}
	})
}

// TestExpiredEventsSkipped: a webhook whose room's member and room events
// past its position were all deleted by retention moves past them, and
// is no longer behind once the rest is delivered.
func TestExpiredEventsSkipped(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		rcv, srv := newReceiver(t, "whsec_test_secret_4", 0)
		h, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "all", URL: srv.URL, Secret: "whsec_test_secret_4", Kinds: parley.HookKinds})
		if err != nil {
			t.Fatal(err)
		}
		u, rooms := fill(t, st) // made after the webhook: their events are past its position
		if n, err := st.(parley.EventExpiry).ExpireRoomEvents(ctx, time.Now().Add(2*time.Hour), time.Hour, 100); err != nil || n != 4 {
			t.Fatalf("expire: %d, %v", n, err)
		}
		m, _, err := st.Send(ctx, parley.NewMessage{RoomID: rooms[0].ID, SenderID: u.ID, SenderName: u.Name, Body: "after"})
		if err != nil {
			t.Fatal(err)
		}
		mgr := startManager(t, st, "n1", 1000)
		defer mgr.Close()
		got := rcv.await(t, map[string]bool{webhook.SendID(rooms[0].ID, m.Seq): true})
		if len(got) != 1 {
			t.Errorf("delivered %d, want the message only", len(got))
		}
		deadline := time.Now().Add(30 * time.Second) // a hang guard
		for {
			ps, err := st.HookPositions(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still behind in %+v", ps)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// racingStore commits more of a room's activity between the worker's
// read of the positions and its reads of the streams: race runs once,
// on the first HookPositions whose position of the room matches when.
type racingStore struct {
	hookStore
	room  string
	when  func(p parley.HookPosition) bool
	race  func()
	fired atomic.Bool
}

func (s *racingStore) HookPositions(ctx context.Context, h parley.Webhook) ([]parley.HookPosition, error) {
	ps, err := s.hookStore.HookPositions(ctx, h)
	for _, p := range ps {
		if err == nil && p.RoomID == s.room && s.when(p) && !s.fired.Swap(true) {
			s.race()
		}
	}
	return ps, err
}

// TestStreamsReadAtOneCut: sends, changes and member or room events
// committed after the worker read the positions, while it reads the
// three streams one after the other, are delivered in the order they
// were made. The worker reads each stream only up to the positions,
// which are one consistent cut of the room; reading one stream past
// them while another was not read (it was not behind) delivered the
// later commits first. (Three PostgreSQL nodes delivered a
// room.updated before the send committed just before it.)
func TestStreamsReadAtOneCut(t *testing.T) {
	cases := []struct {
		name    string
		pending string // the change the positions see behind
		// when the worker's positions show the pending change alone
		when func(p parley.HookPosition) bool
	}{
		{"a member event pending, then a send and a room event", "join",
			func(p parley.HookPosition) bool {
				return p.LastEvent > p.Event && p.LastSeq == p.Seq && p.LastChange == p.Change
			}},
		{"a send pending, then a room event and a send", "send",
			func(p parley.HookPosition) bool {
				return p.LastSeq > p.Seq && p.LastEvent == p.Event && p.LastChange == p.Change
			}},
		{"an edit pending, then a room event and an edit", "edit",
			func(p parley.HookPosition) bool {
				return p.LastChange > p.Change && p.LastSeq == p.Seq && p.LastEvent == p.Event
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, st hookStore) {
				ctx := context.Background()
				alice, bob, r := fillWithBob(t, st)
				must := func(err error) {
					t.Helper()
					if err != nil {
						t.Fatal(err)
					}
				}
				lastEvent := func() string {
					t.Helper()
					evs, err := st.RoomEvents(ctx, r.ID, 0, parley.MaxPageLimit)
					must(err)
					return webhook.EventID(r.ID, evs[len(evs)-1].N)
				}
				send := func(body string) (int64, string) {
					t.Helper()
					m, _, err := st.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: alice.ID, SenderName: alice.Name, Body: body})
					must(err)
					return m.Seq, webhook.SendID(r.ID, m.Seq)
				}
				rename := func(title string) string {
					t.Helper()
					_, err := st.UpdateRoom(ctx, r.ID, alice.ID, parley.RoomUpdate{Title: &title})
					must(err)
					return lastEvent()
				}
				edit := func(seq int64) string {
					t.Helper()
					m, err := st.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: seq, EditorID: alice.ID, Body: "edited"})
					must(err)
					return webhook.ChangeID(r.ID, m.Change)
				}
				first, _ := send("first")
				second, _ := send("second")

				// The race's commits, in the order they were made; raced
				// is closed after them.
				var made []string
				raced := make(chan struct{})
				rs := &racingStore{hookStore: st, room: r.ID, when: tc.when, race: func() {
					defer close(raced)
					switch tc.pending {
					case "join":
						_, s := send("raced")
						made = append(made, s, rename("raced"))
					case "send":
						e := rename("raced")
						_, s := send("raced")
						made = append(made, e, s)
					case "edit":
						made = append(made, rename("raced"), edit(second))
					}
				}}
				rcv, srv := newReceiver(t, "whsec_test_secret_4", 0)
				if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "all", URL: srv.URL,
					Secret: "whsec_test_secret_4", Kinds: parley.HookKinds, RoomID: r.ID}); err != nil {
					t.Fatal(err)
				}
				m := startManager(t, rs, "n1", 1000)
				defer m.Close()
				var pending string
				switch tc.pending {
				case "join":
					_, _, err := st.Join(ctx, r.ID, bob.ID)
					must(err)
					pending = lastEvent()
				case "send":
					_, pending = send("pending")
				case "edit":
					pending = edit(first)
				}
				select {
				case <-raced:
				case <-time.After(60 * time.Second):
					t.Fatal("the worker never read the positions with the pending change alone")
				}
				order := append([]string{pending}, made...)
				want := map[string]bool{}
				for _, id := range order {
					want[id] = true
				}
				var ids []string
				for _, d := range rcv.await(t, want) {
					if want[d.ID] && !slices.Contains(ids, d.ID) {
						ids = append(ids, d.ID)
					}
				}
				if strings.Join(ids, " ") != strings.Join(order, " ") {
					t.Errorf("delivered %v\nwant      %v (the order they were made)", ids, order)
				}
			})
		})
	}
}

// syncGate is a store whose commits are durable only when the test says:
// Synced waits for gate.
type syncGate struct {
	hookStore
	gate  chan struct{}
	calls atomic.Int64
}

func (s *syncGate) Synced(ctx context.Context) error {
	s.calls.Add(1)
	select {
	case <-s.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SQLite's readers see a commit before its fsync, so its store is one.
var _ interface{ Synced(context.Context) error } = (*sqlite.Store)(nil)

// TestDeliversOnlyWhatIsSynced: on a store whose readers see commits
// before they are durable, nothing the worker read is delivered before
// the store says every commit it saw is durable: a delivery cannot be
// taken back after a power loss.
func TestDeliversOnlyWhatIsSynced(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	u, rooms := fill(t, st)
	rcv, srv := newReceiver(t, "whsec_test_secret_5", 0)
	if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "all", URL: srv.URL,
		Secret: "whsec_test_secret_5", Kinds: parley.HookKinds}); err != nil {
		t.Fatal(err)
	}
	gs := &syncGate{hookStore: st, gate: make(chan struct{})}
	m := startManager(t, gs, "n1", 1000)
	defer m.Close()
	msg, _, err := st.Send(ctx, parley.NewMessage{RoomID: rooms[0].ID, SenderID: u.ID, SenderName: u.Name, Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); gs.calls.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never asked whether what it read is durable")
		}
	}
	// The worker waits in Synced: nothing may have gone out.
	rcv.mu.Lock()
	early := len(rcv.got)
	rcv.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d deliveries before the commits were durable", early)
	}
	close(gs.gate)
	rcv.await(t, map[string]bool{webhook.SendID(rooms[0].ID, msg.Seq): true})
}

// hotStore edits a message just before each of the worker's first reads
// of a room's changes: every time, the message is past the positions'
// cut when read.
type hotStore struct {
	hookStore
	edit  func()
	left  atomic.Int64 // edits still to make
	reads atomic.Int64
}

func (s *hotStore) Changed(ctx context.Context, roomID string, after int64, limit int) ([]parley.Message, error) {
	s.reads.Add(1)
	if s.left.Add(-1) >= 0 {
		s.edit()
	}
	return s.hookStore.Changed(ctx, roomID, after, limit)
}

// TestHotMessageDelivered: a message edited again between every read of
// the positions and of the changes (a burst of reactions on one message)
// waits while its change is past the cut, and is delivered, as it is at
// the end, once the burst is over: never delivered past the cut, never
// lost.
func TestHotMessageDelivered(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	u, rooms := fill(t, st)
	r := rooms[0]
	msg, _, err := st.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: "hot"})
	if err != nil {
		t.Fatal(err)
	}
	rcv, srv := newReceiver(t, "whsec_test_secret_6", 0)
	if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "all", URL: srv.URL,
		Secret: "whsec_test_secret_6", Kinds: parley.HookKinds, RoomID: r.ID}); err != nil {
		t.Fatal(err)
	}
	n := 0
	hs := &hotStore{hookStore: st}
	hs.edit = func() {
		n++
		if _, err := st.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: msg.Seq, EditorID: u.ID, Body: fmt.Sprint("edit ", n)}); err != nil {
			t.Error(err)
		}
	}
	const burst = 5
	hs.left.Store(burst)
	m := startManager(t, hs, "n1", 1000)
	defer m.Close()
	if _, err := st.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: msg.Seq, EditorID: u.ID, Body: "first"}); err != nil {
		t.Fatal(err)
	}
	last := webhook.ChangeID(r.ID, 1+burst)
	got := rcv.await(t, map[string]bool{last: true})
	for _, d := range got {
		if d.ID != last {
			t.Errorf("delivered %s (%q), want only the last change, %s", d.ID, d.msg.Body, last)
		}
	}
	if d := got[len(got)-1]; d.msg.Body != fmt.Sprint("edit ", burst) {
		t.Errorf("the last change delivered %q, want %q", d.msg.Body, fmt.Sprint("edit ", burst))
	}
	if reads := hs.reads.Load(); reads < burst+1 {
		t.Errorf("%d reads of the changes, want at least %d: one a burst's edit, then the last", reads, burst+1)
	}
}
