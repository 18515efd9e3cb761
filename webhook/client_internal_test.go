package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"parley"
)

// TestPost: what each kind of receiver makes of a delivery.
func TestPost(t *testing.T) {
	loop, _ := NewFilter([]string{"127.0.0.0/8"})
	strict, _ := NewFilter(nil)
	hit := make(chan string, 10)
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		hit <- r.Header.Get(HeaderSignature)
		w.WriteHeader(204)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select { // answers only after the test is done with it
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)
	host := "127.0.0.1"
	body := []byte(`{"id":"r.s1"}`)
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name   string
		f      *Filter
		path   string
		result string
		hits   int
	}{
		{"2xx", loop, "/ok", resultOK, 1},
		{"5xx", loop, "/fail", resultFailed, 0},
		{"redirect not followed", loop, "/redirect", resultRedirect, 0},
		{"slow receiver", loop, "/slow", resultTimeout, 0},
		{"loopback refused", strict, "/ok", resultRefused, 0},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			client := newClient(c.f, host, 200*time.Millisecond)
			defer client.CloseIdleConnections()
			got, err := post(context.Background(), client, srv.URL+c.path, []byte("secret"), "r.s1", body, now)
			if got != c.result {
				t.Fatalf("post = %s (%v), want %s", got, err, c.result)
			}
			if c.result == resultRefused {
				var re *RefusedError
				if !errors.As(err, &re) {
					t.Errorf("err = %v, want a RefusedError", err)
				}
			}
			if len(hit) != c.hits {
				t.Fatalf("the receiver's /ok was hit %d times, want %d", len(hit), c.hits)
			}
			if c.hits == 1 {
				if sig := <-hit; sig != Sign([]byte("secret"), now.Unix(), body) {
					t.Errorf("signature %q, want Sign's", sig)
				}
			}
		})
	}
}

// TestMerge: a room's sends and changes in one order, a change never
// before its message's send.
func TestMerge(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	tp := func(s int) *time.Time { v := at(s); return &v }
	sends := []parley.Message{{Seq: 3, SentAt: at(10)}, {Seq: 4, SentAt: at(20)}, {Seq: 5, SentAt: at(30)}}
	changes := []parley.Message{
		{Seq: 2, Change: 7, SentAt: at(1), EditedAt: tp(15)},                     // between sends 3 and 4
		{Seq: 5, Change: 8, SentAt: at(30), EditedAt: tp(25), DeletedAt: tp(31)}, // after send 5 (its own)
		{Seq: 9, Change: 9, SentAt: at(40), EditedAt: tp(41)},                    // its send is not read yet
	}
	evs, err := merge("r", parley.HookPosition{RoomID: "r", Seq: 2, Change: 6}, nil, sends, changes, [3]bool{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.id+" "+e.kind)
	}
	want := []string{"r.s3 message.sent", "r.c7 message.edited", "r.s4 message.sent", "r.s5 message.sent", "r.c8 message.deleted"}
	if len(got) != len(want) {
		t.Fatalf("merge = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("merge[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	if last := evs[len(evs)-1]; last.seq != 5 || last.change != 8 {
		t.Errorf("last position = %d/%d, want 5/8", last.seq, last.change)
	}
}

// TestMergeChangePlaces: a change goes where it committed among the
// sends (Message.ChangeSeq), whatever its time says: after the send its
// place names and before the next one read, also across a seq the room
// never stored.
func TestMergeChangePlaces(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	tp := func(s int) *time.Time { v := at(s); return &v }
	sends := []parley.Message{{Seq: 3, SentAt: at(10)}, {Seq: 4, SentAt: at(20)}, {Seq: 5, SentAt: at(30)}, {Seq: 8, SentAt: at(50)}}
	changes := []parley.Message{
		{Seq: 2, Change: 7, ChangeSeq: 4, SentAt: at(1), EditedAt: tp(12)},   // its clock says before send 4
		{Seq: 3, Change: 8, ChangeSeq: 4, SentAt: at(10), EditedAt: tp(40)},  // its clock says after send 5
		{Seq: 5, Change: 9, ChangeSeq: 6, SentAt: at(30), DeletedAt: tp(31)}, // after 5, before 8 (6 and 7 never stored)
	}
	evs, err := merge("r", parley.HookPosition{RoomID: "r", Seq: 2, Change: 6}, nil, sends, changes, [3]bool{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.id)
	}
	if g, want := strings.Join(got, " "), "r.s3 r.s4 r.c7 r.c8 r.s5 r.c9 r.s8"; g != want {
		t.Errorf("merge = %s, want %s", g, want)
	}
	// A full page of sends that ends before a change's place stops it.
	evs, err = merge("r", parley.HookPosition{RoomID: "r", Seq: 2, Change: 6}, nil, sends[:1], changes, [3]bool{false, true, false})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].id != "r.s3" {
		t.Errorf("merge with a full page of one send = %d events, want r.s3 alone", len(evs))
	}
}

// TestMerge3: member and room events, sends and changes in one order:
// each event where the room's counters it stored put it, whatever its
// time says, the sends and changes between by time, each stream in its
// own order, a change never before its send; a stream whose full page is
// used up stops the merge.
func TestMerge3(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	tp := func(s int) *time.Time { v := at(s); return &v }
	room := func(lastSeq, lastChange int64) parley.Room {
		return parley.Room{ID: "r", Title: "T", LastSeq: lastSeq, LastChange: lastChange}
	}
	evs := []parley.RoomEvent{
		// Committed before send 3, in the same second.
		{N: 4, Kind: parley.HookMemberJoined, Member: parley.RoomMember{Member: parley.Member{UserID: "u1", Role: "member"}, Name: "ann"}, At: at(10), Room: room(2, 6)},
		// After change 7, written by a node whose clock is behind: its
		// time says before send 3.
		{N: 5, Kind: parley.HookRoomUpdated, ActorID: "u0", Room: room(3, 7), At: at(5)},
		// After everything read.
		{N: 6, Kind: parley.HookMemberBanned, ActorID: "u0", Member: parley.RoomMember{Member: parley.Member{UserID: "u1"}}, At: at(50), Room: room(4, 8)},
	}
	sends := []parley.Message{{Seq: 3, SentAt: at(10)}, {Seq: 4, SentAt: at(20)}}
	changes := []parley.Message{
		{Seq: 3, Change: 7, SentAt: at(10), EditedAt: tp(15)},
		{Seq: 4, Change: 8, SentAt: at(20), EditedAt: tp(12)}, // earlier than its send by the clock: after it all the same
	}
	run := func(full [3]bool) []event {
		t.Helper()
		out, err := merge("r", parley.HookPosition{RoomID: "r", Seq: 2, Change: 6, Event: 3}, evs, sends, changes, full)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ids := func(out []event) string {
		var s []string
		for _, e := range out {
			s = append(s, e.id+" "+e.kind)
		}
		return strings.Join(s, ", ")
	}
	out := run([3]bool{})
	want := "r.e4 member.joined, r.s3 message.sent, r.c7 message.edited, r.e5 room.updated, r.s4 message.sent, r.c8 message.edited, r.e6 member.banned"
	if got := ids(out); got != want {
		t.Fatalf("merge =\n%s\nwant\n%s", got, want)
	}
	if last := out[len(out)-1]; last.seq != 4 || last.change != 8 || last.event != 6 {
		t.Errorf("last position = %d/%d/%d, want 4/8/6", last.seq, last.change, last.event)
	}
	if e := out[3]; e.seq != 3 || e.change != 7 || e.event != 5 {
		t.Errorf("position after r.e5 = %d/%d/%d, want 3/7/5", e.seq, e.change, e.event)
	}
	var body struct {
		ID    string
		Type  string
		Event int64
		Actor string
		Data  struct {
			User struct{ ID, Name string }
			Role string
		}
	}
	if err := json.Unmarshal(out[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != "r.e4" || body.Event != 4 || body.Data.User.ID != "u1" || body.Data.User.Name != "ann" || body.Data.Role != "member" {
		t.Errorf("member.joined body %s", out[0].body)
	}
	if !strings.Contains(string(out[3].body), `"actor":"u0"`) || !strings.Contains(string(out[3].body), `"title":"T"`) {
		t.Errorf("room.updated body %s, want the actor and the room", out[3].body)
	}
	// The sends' page was full: nothing after its last send is decided.
	if got, want := ids(run([3]bool{false, true, false})), "r.e4 member.joined, r.s3 message.sent, r.c7 message.edited, r.e5 room.updated, r.s4 message.sent"; got != want {
		t.Errorf("merge with a full page of sends =\n%s\nwant\n%s", got, want)
	}
	// A full page of one send: what follows it, events included, waits
	// for the next round.
	out, err := merge("r", parley.HookPosition{RoomID: "r", Seq: 2, Change: 6, Event: 3}, evs, sends[:1], changes[:1], [3]bool{false, true, false})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(out), "r.e4 member.joined, r.s3 message.sent"; got != want {
		t.Errorf("merge with a full page of one send =\n%s\nwant\n%s", got, want)
	}
	// A seq the room never stored (an import's gap: the event says the
	// room was at seq 3, and no send 3 exists) does not hold the event up.
	out, err = merge("r", parley.HookPosition{RoomID: "r", Seq: 2, Change: 6, Event: 4}, evs[1:2], sends[1:], nil, [3]bool{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(out), "r.e5 room.updated, r.s4 message.sent"; got != want {
		t.Errorf("merge over a gap in the seqs =\n%s\nwant\n%s", got, want)
	}
}
