package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/webhook"
)

// hookReceiver is a webhook receiver on a fixed address, so that a test
// can kill it and start it again where the webhook points. It checks
// every signature and records the deliveries it answered 200.
type hookReceiver struct {
	t      *testing.T
	addr   string
	secret []byte

	mu   sync.Mutex // guards the following fields
	srv  *http.Server
	fail int           // answer the next fail deliveries 500
	hold chan struct{} // non-nil: hold each delivery until it is closed, then answer 500
	held int           // deliveries held so far
	got  []hookDelivery
	bad  int
	// order, when set, is where each member or room event falls among
	// the room's sends (hookLoad.order).
	order *hookOrder
}

type hookDelivery struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Room   string `json:"room"`
	Seq    int64  `json:"seq"`
	Change int64  `json:"change"`
	Event  int64  `json:"event"`
	Actor  string `json:"actor"`
	Data   struct {
		Seq   int64  `json:"seq"`   // a message's
		Title string `json:"title"` // a room's
		User  struct {
			ID string `json:"id"`
		} `json:"user"` // a member's
	} `json:"data"`
}

// hookOrder is where the member and room events fall among the sends of
// their room: afterSeq of an event is the room's last seq when it was
// made, afterEvent of a send the room's last event.
type hookOrder struct {
	afterSeq, afterEvent map[string]int64
	kind                 map[string]string // of each member or room event
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &hookReceiver{t: t, addr: ln.Addr().String(), secret: []byte(secret)}
	r.serve(ln)
	t.Cleanup(r.kill)
	return r
}

func (r *hookReceiver) serve(ln net.Listener) {
	srv := &http.Server{Handler: r}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go srv.Serve(ln)
}

// kill closes the receiver and every connection to it.
func (r *hookReceiver) kill() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// restart listens again on the same address.
func (r *hookReceiver) restart() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("restart the receiver on %s: %v", r.addr, err)
	}
	r.serve(ln)
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	if hold := r.hold; hold != nil {
		r.held++
		r.mu.Unlock()
		<-hold
		w.WriteHeader(500)
		return
	}
	defer r.mu.Unlock()
	if err := webhook.Verify(r.secret, req.Header.Get(webhook.HeaderTimestamp), req.Header.Get(webhook.HeaderSignature), body, time.Now(), webhook.DefaultTolerance); err != nil {
		r.bad++
		w.WriteHeader(401)
		return
	}
	if r.fail > 0 {
		r.fail--
		w.WriteHeader(500)
		return
	}
	var d hookDelivery
	if err := json.Unmarshal(body, &d); err != nil {
		r.t.Errorf("delivery %s: %v", body, err)
	}
	r.got = append(r.got, d)
	w.WriteHeader(204)
}

// await waits until every id of want was delivered, and checks the
// deliveries (deduplicated by id) are exactly want, each room's in order.
func (r *hookReceiver) await(t *testing.T, want map[string]bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second) // a hang guard
	for {
		r.mu.Lock()
		got := append([]hookDelivery(nil), r.got...)
		bad := r.bad
		order := r.order
		r.mu.Unlock()
		ids := map[string]bool{}
		for _, d := range got {
			ids[d.ID] = true
		}
		missing := 0
		for id := range want {
			if !ids[id] {
				missing++
			}
		}
		if missing == 0 {
			checkHookOrder(t, got, want, order)
			if bad != 0 {
				t.Errorf("%d deliveries failed the signature check", bad)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events never delivered", missing, len(want))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkHookOrder checks each room's stream of sends, of changes and of
// member and room events is in its order, a change after its send, and,
// with order, each member or room event exactly between the sends it was
// made between.
func checkHookOrder(t *testing.T, got []hookDelivery, want map[string]bool, order *hookOrder) {
	t.Helper()
	seen := map[string]bool{}
	type pos struct{ seq, change, event int64 }
	at := map[string]pos{}
	for _, d := range got {
		if !want[d.ID] {
			t.Errorf("delivered %s, which is no event of the test", d.ID)
		}
		if seen[d.ID] {
			continue // a repeat, as at least once allows: deduplicated by id
		}
		seen[d.ID] = true
		p := at[d.Room]
		switch d.Type {
		case parley.HookMessageSent:
			if d.Seq != p.seq+1 {
				t.Errorf("room %s: send %d after send %d", d.Room, d.Seq, p.seq)
			}
			if order != nil && order.afterEvent[d.ID] != p.event {
				t.Errorf("room %s: send %d after event %d, want after event %d", d.Room, d.Seq, p.event, order.afterEvent[d.ID])
			}
			p.seq = d.Seq
		case parley.HookMessageEdited, parley.HookMessageDeleted:
			if d.Change != p.change+1 || d.Data.Seq > p.seq {
				t.Errorf("room %s: change %d (of message %d) after change %d and send %d", d.Room, d.Change, d.Data.Seq, p.change, p.seq)
			}
			p.change = d.Change
		default:
			if d.Event != p.event+1 || d.ID != webhook.EventID(d.Room, d.Event) {
				t.Errorf("room %s: event %s (%d) after event %d", d.Room, d.ID, d.Event, p.event)
			}
			if order != nil && (order.afterSeq[d.ID] != p.seq || order.kind[d.ID] != d.Type) {
				t.Errorf("room %s: %s %s after send %d, want %s after send %d",
					d.Room, d.Type, d.ID, p.seq, order.kind[d.ID], order.afterSeq[d.ID])
			}
			if member := strings.HasPrefix(d.Type, "member."); (member && d.Data.User.ID == "") || (!member && d.Data.Title == "") {
				t.Errorf("room %s: %s %s without its member or room: %+v", d.Room, d.Type, d.ID, d.Data)
			}
			if (d.Type == parley.HookMemberBanned || d.Type == parley.HookRoomUpdated) && d.Actor == "" {
				t.Errorf("room %s: %s %s without its actor", d.Room, d.Type, d.ID)
			}
			p.event = d.Event
		}
		at[d.Room] = p
	}
	if len(seen) != len(want) {
		t.Errorf("%d distinct events delivered, want %d", len(seen), len(want))
	}
}

// hookLoad is a user's activity in two rooms, with the ids of the events
// it made: sends, every third message edited, every fifth deleted (never
// both, so that each change is delivered on its own); the rooms'
// creation, and another user's joins, leaves and ban (people).
type hookLoad struct {
	t       *testing.T
	c       *client
	other   *client // the user who joins and leaves
	otherID string
	rooms   []string
	changes map[string]int64
	seqs    map[string]int64 // each room's last seq
	events  map[string]int64 // each room's last member or room event
	order   *hookOrder
	want    map[string]bool
}

func newHookLoad(t *testing.T, addr string) *hookLoad {
	c, _ := mustSignUp(t, addr, "hooker")
	other, u := mustSignUp(t, addr, "hookjoiner")
	l := &hookLoad{t: t, c: c, other: other, otherID: u.ID, changes: map[string]int64{}, want: map[string]bool{},
		seqs: map[string]int64{}, events: map[string]int64{},
		order: &hookOrder{afterSeq: map[string]int64{}, afterEvent: map[string]int64{}, kind: map[string]string{}}}
	for i := range 2 {
		var r room
		if st := c.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": fmt.Sprint("hooks ", i)}, &r); st != http.StatusCreated {
			t.Fatalf("create room: %d", st)
		}
		l.rooms = append(l.rooms, r.ID)
		l.event(r.ID, parley.HookRoomCreated)
		l.event(r.ID, parley.HookMemberJoined)
	}
	return l
}

// event counts a member or room event of kind made in room rid now.
func (l *hookLoad) event(rid, kind string) {
	l.events[rid]++
	id := webhook.EventID(rid, l.events[rid])
	l.want[id] = true
	l.order.afterSeq[id] = l.seqs[rid]
	l.order.kind[id] = kind
}

// people: in the first room, the other user joins, the owner renames the
// room, the other user writes, leaves, joins again and is banned, with
// the owner's messages between.
func (l *hookLoad) people() {
	t, rid := l.t, l.rooms[0]
	do := func(c *client, method, path string, body any, want int, kind string) {
		t.Helper()
		if st := c.do(method, path, body, nil); st != want {
			t.Fatalf("%s %s: %d, want %d", method, path, st, want)
		}
		if kind != "" {
			l.event(rid, kind)
		}
	}
	send := func(c *client) {
		t.Helper()
		var m message
		if st := c.do("POST", "/api/rooms/"+rid+"/messages", map[string]string{"body": "people"}, &m); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
		l.sent(rid, m.Seq)
	}
	do(l.other, "POST", "/api/rooms/"+rid+"/members", nil, http.StatusCreated, parley.HookMemberJoined)
	send(l.other)
	do(l.c, "PATCH", "/api/rooms/"+rid, map[string]string{"title": "renamed " + fmt.Sprint(l.events[rid])}, http.StatusOK, parley.HookRoomUpdated)
	send(l.c)
	do(l.other, "DELETE", "/api/rooms/"+rid+"/members/me", nil, http.StatusNoContent, parley.HookMemberLeft)
	do(l.other, "POST", "/api/rooms/"+rid+"/members", nil, http.StatusCreated, parley.HookMemberJoined)
	send(l.c)
	do(l.c, "DELETE", "/api/rooms/"+rid+"/members/"+l.otherID+"?ban=true", nil, http.StatusNoContent, parley.HookMemberBanned)
	do(l.other, "POST", "/api/rooms/"+rid+"/members", nil, http.StatusForbidden, "")       // banned: no event
	do(l.c, "DELETE", "/api/rooms/"+rid+"/bans/"+l.otherID, nil, http.StatusNoContent, "") // an unban is no event
	send(l.c)
}

// sent counts the send of seq in room rid.
func (l *hookLoad) sent(rid string, seq int64) {
	id := webhook.SendID(rid, seq)
	l.want[id] = true
	l.seqs[rid] = seq
	l.order.afterEvent[id] = l.events[rid]
}

// on makes the load's next requests go to addr.
func (l *hookLoad) on(addr string) { l.c.base, l.other.base = "http://"+addr, "http://"+addr }

func (l *hookLoad) run(n int) {
	t := l.t
	for i := range n {
		for _, rid := range l.rooms {
			var m message
			if st := l.c.do("POST", "/api/rooms/"+rid+"/messages", map[string]string{"body": fmt.Sprint("m", i)}, &m); st != http.StatusCreated {
				t.Fatalf("send: %d", st)
			}
			l.sent(rid, m.Seq)
			switch {
			case i%5 == 4:
				if st := l.c.do("DELETE", fmt.Sprintf("/api/rooms/%s/messages/%d", rid, m.Seq), nil, nil); st != http.StatusNoContent {
					t.Fatalf("delete: %d", st)
				}
			case i%3 == 2:
				if st := l.c.do("PATCH", fmt.Sprintf("/api/rooms/%s/messages/%d", rid, m.Seq), map[string]string{"body": "edited"}, nil); st != http.StatusOK {
					t.Fatalf("edit: %d", st)
				}
			default:
				continue
			}
			l.changes[rid]++
			l.want[webhook.ChangeID(rid, l.changes[rid])] = true
		}
	}
}

// hookFlags are the serve flags of the webhook tests: the receiver on
// loopback allowed, quick polls and retries.
var hookFlags = []string{"--webhook-allow", "127.0.0.1", "--webhook-poll", "100ms", "--webhook-backoff-min", "10ms",
	"--webhook-backoff-max", "200ms", "--webhook-timeout", "1s", "--signup-rate", "0", "--rest-send-rate", "0"}

func addHook(t *testing.T, r *hookReceiver, store ...string) {
	t.Helper()
	var out, errs bytes.Buffer
	args := append([]string{"webhook", "add", "--name", "e2e", "--url", "http://" + r.addr + "/hook",
		"--secret", string(r.secret), "--webhook-allow", "127.0.0.1"}, store...)
	if err := run(context.Background(), args, &out, &errs); err != nil {
		t.Fatalf("parley webhook add: %v: %s", err, errs.String())
	}
}

// TestWebhookEndToEnd: a `parley serve` process (SQLite) delivers to a
// receiver that fails, answers too slowly, is killed and started again,
// and the server itself is SIGKILLed in the middle of a delivery and
// started again: every event arrives, each room's in order, exactly the
// events made (deduplicated by id).
func TestWebhookEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	data := t.TempDir()
	rcv := newHookReceiver(t, "whsec_e2e_0123456789")
	srv := startServeProcess(t, append([]string{"--node-id", "hooks-1", "--data", data}, hookFlags...)...)
	addHook(t, rcv, "--data", data)
	load := newHookLoad(t, srv.addr)

	// A receiver that fails its first 5 deliveries.
	rcv.mu.Lock()
	rcv.fail, rcv.order = 5, load.order
	rcv.mu.Unlock()
	load.run(12)
	rcv.await(t, load.want)

	// A receiver that is down while events happen, then comes back.
	rcv.kill()
	load.run(3)
	load.people()
	load.run(3)
	rcv.restart()
	rcv.await(t, load.want)

	// A receiver slower than --webhook-timeout: held until the server
	// gives up on it (the hold is released after), then the server is
	// SIGKILLed with a delivery in flight and started again.
	hold := make(chan struct{})
	rcv.mu.Lock()
	rcv.hold = hold
	rcv.mu.Unlock()
	load.run(6)
	if _, ok := srv.waitLog(regexp.MustCompile(`webhook delivery failed.* result=timeout`), 60*time.Second); !ok {
		t.Fatalf("no delivery timed out: %s", srv.lines())
	}
	for { // the next attempt, held: the server is killed in the middle of it
		rcv.mu.Lock()
		n := rcv.held
		rcv.mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv.kill()
	rcv.mu.Lock()
	rcv.hold = nil
	rcv.mu.Unlock()
	close(hold)
	srv = startServeProcess(t, append([]string{"--node-id", "hooks-1", "--data", data}, hookFlags...)...)
	load.on(srv.addr)
	load.run(2)
	load.people()
	load.run(2)
	rcv.await(t, load.want)
}

// TestWebhookClusterLease: three `parley serve` processes in cluster mode
// deliver one webhook, one node at a time; the lease holder is SIGKILLed
// and another node takes over within --webhook-lease and --webhook-poll,
// with no event missing.
func TestWebhookClusterLease(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	env := needCluster(t)
	rcv := newHookReceiver(t, "whsec_cluster_0123456789")
	const lease = 2 * time.Second
	var nodes []*serveProcess
	for i := range 3 {
		nodes = append(nodes, startServeProcess(t,
			append([]string{"--node-id", fmt.Sprint("hooknode-", i, "-", parley.NewID()[:6]), "--data", t.TempDir(), "--store", env.store, "--broker", env.broker, "--redis", env.redis,
				"--redis-prefix", env.prefix, "--webhook-lease", lease.String()}, hookFlags...)...))
	}
	addHook(t, rcv, "--store", env.store)
	load := newHookLoad(t, nodes[0].addr)
	rcv.mu.Lock()
	rcv.order = load.order
	rcv.mu.Unlock()
	load.run(3)
	load.people()
	load.run(3)
	rcv.await(t, load.want)

	holder := hookHolder(t, nodes)
	var others []*serveProcess
	for _, n := range nodes {
		if n != holder {
			others = append(others, n)
		}
	}
	holder.kill()
	killed := time.Now()
	load.on(others[0].addr)
	load.run(3)
	load.people()
	load.run(3)
	rcv.await(t, load.want)
	took := time.Since(killed)
	next := hookHolder(t, others)
	t.Logf("node %s held the lease; killed, %s took over; every event delivered %v after the kill", holder.addr, next.addr, took)
	if bound := lease + 100*time.Millisecond + 10*time.Second; took > bound {
		t.Errorf("the takeover took %v, over the bound %v (the lease, the poll and time to deliver)", took, bound)
	}
}

// hookHolder returns the one node of nodes whose parley_webhook_leases
// is 1, waiting for it.
func hookHolder(t *testing.T, nodes []*serveProcess) *serveProcess {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var held []*serveProcess
		for _, n := range nodes {
			if v, err := processMetric(n.addr, "parley_webhook_leases"); err == nil && v == 1 {
				held = append(held, n)
			}
		}
		if len(held) == 1 {
			return held[0]
		}
		if len(held) > 1 {
			t.Fatalf("%d nodes hold the webhook's lease", len(held))
		}
		if time.Now().After(deadline) {
			t.Fatal("no node holds the webhook's lease")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processMetric reads a metric without labels from addr's /metrics.
func processMetric(addr, name string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			var f float64
			_, err := fmt.Sscan(v, &f)
			return f, err
		}
	}
	return 0, errors.New("no metric " + name)
}

// TestWebhookCommandRefusals: `parley webhook add` refuses, with an error
// that says why, a target on loopback or a private range (unless
// allowed), a URL that is no http(s) URL, an unknown event kind and a
// short secret, before it touches any store.
func TestWebhookCommandRefusals(t *testing.T) {
	data := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"loopback", []string{"--url", "http://127.0.0.1:9/hook"}, "loopback, private"},
		{"localhost", []string{"--url", "http://localhost:9/hook"}, "loopback, private"},
		{"private range", []string{"--url", "http://10.1.2.3/hook"}, "loopback, private"},
		{"metadata service", []string{"--url", "http://169.254.169.254/latest"}, "loopback, private"},
		{"IPv4-mapped loopback", []string{"--url", "http://[::ffff:127.0.0.1]/"}, "loopback, private"},
		{"allowed elsewhere only", []string{"--url", "http://10.1.2.3/hook", "--webhook-allow", "10.9.0.0/16"}, "loopback, private"},
		{"not http", []string{"--url", "file:///etc/passwd"}, "want http:// or https://"},
		{"credentials", []string{"--url", "https://u:p@93.184.216.34/"}, "credentials"},
		{"unknown kind", []string{"--url", "https://93.184.216.34/", "--events", "message.sent,member.typing"}, `unknown event kind "member.typing"`},
		{"short secret", []string{"--url", "https://93.184.216.34/", "--secret", "short"}, "at least 16 bytes"},
		{"bad name", []string{"--url", "https://93.184.216.34/", "--name", "a b"}, "name is 3 to 32"},
		{"allowed, but no store", []string{"--url", "http://127.0.0.1:9/hook", "--webhook-allow", "127.0.0.1"}, "no Parley database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"webhook", "add", "--name", "refused", "--data", data}, c.args...)
			err := run(context.Background(), args, &out, &errs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("parley %s = %v, want an error saying %q", strings.Join(args, " "), err, c.want)
			}
		})
	}
}

// TestWebhookRefusedTarget: a webhook added for a loopback receiver (the
// command allowed it) on a node that does not allow loopback is refused
// at each connection, logged and counted, and paused after
// --webhook-max-failures: the receiver is never reached and the node
// serves on.
func TestWebhookRefusedTarget(t *testing.T) {
	rcv := newHookReceiver(t, "whsec_refused_0123456")
	m := MustOpenMain(t, func(c *Config) {
		c.SignupRate = 0
		c.Webhooks.Poll, c.Webhooks.MaxFailures = 20*time.Millisecond, 3
		c.Webhooks.BackoffMin, c.Webhooks.BackoffMax = time.Millisecond, 5*time.Millisecond
	})
	addHook(t, rcv, "--data", m.Config.Data)
	load := newHookLoad(t, m.Addr())
	load.run(1)
	deadline := time.Now().Add(60 * time.Second)
	for metric(t, m, "parley_webhooks_paused") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the webhook was never paused")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// 3, or one more: the two rooms are delivered at once.
	if n := metricLabelled(t, m, `parley_webhook_deliveries_total{result="refused"}`); n < 3 || n > 4 {
		t.Errorf("refused deliveries = %v, want 3 (or 4)", n)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.got) != 0 || rcv.bad != 0 {
		t.Errorf("the receiver was reached: %d deliveries", len(rcv.got)+rcv.bad)
	}
	load.run(1) // the node serves on
}

// metricLabelled reads one labelled series from a node's /metrics.
func metricLabelled(t *testing.T, m *Main, series string) float64 {
	t.Helper()
	v, err := processMetric(m.Addr(), series)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testWebhookAdmin: an API key of the scope webhooks manages webhooks over
// HTTP on node a (add, list, resume, remove; the secret shown once, a
// refused URL 400), a person's token and a key without the scope are 403,
// and the webhook it added delivers what happens on node b.
func testWebhookAdmin(t *testing.T, a, b *Main) {
	rcv := newHookReceiver(t, "whsec_rest_0123456789")
	admin := &client{t: t, base: "http://" + a.Addr(),
		token: apikey(t, append([]string{"create", "--name", "hooks" + parleyID(), "--scopes", "webhooks"}, storeFlags(a)...)...)}
	other := &client{t: t, base: admin.base,
		token: apikey(t, append([]string{"create", "--name", "rooms" + parleyID(), "--scopes", "rooms,post"}, storeFlags(a)...)...)}
	person, _ := mustSignUp(t, a.Addr(), "p"+parleyID())
	name := "rest" + parleyID()
	add := map[string]any{"name": name, "url": "http://" + rcv.addr + "/hook", "events": []string{"message.sent"}}
	for _, c := range []struct {
		who  *client
		body map[string]any
		want int
	}{
		{person, add, http.StatusForbidden},
		{other, add, http.StatusForbidden},
		{admin, map[string]any{"name": name, "url": "http://10.1.2.3/hook"}, http.StatusBadRequest},
		{admin, map[string]any{"name": name, "url": "https://93.184.216.34/", "events": []string{"nope"}}, http.StatusBadRequest},
		{admin, map[string]any{"name": "x", "url": "https://93.184.216.34/"}, http.StatusBadRequest},
	} {
		if st := c.who.do("POST", "/api/webhooks", c.body, nil); st != c.want {
			t.Errorf("POST /api/webhooks %v = %d, want %d", c.body, st, c.want)
		}
	}
	var made struct{ Name, Secret string }
	if st := admin.do("POST", "/api/webhooks", add, &made); st != http.StatusCreated || made.Name != name || !strings.HasPrefix(made.Secret, "whsec_") {
		t.Fatalf("add = %d %+v, want 201 with a secret", st, made)
	}
	if st := admin.do("POST", "/api/webhooks", add, nil); st != http.StatusConflict {
		t.Errorf("add the same name again = %d, want 409", st)
	}
	rcv.mu.Lock()
	rcv.secret = []byte(made.Secret)
	rcv.mu.Unlock()
	var list struct {
		Webhooks []struct{ Name, URL, Secret string }
	}
	if st := admin.do("GET", "/api/webhooks", nil, &list); st != http.StatusOK {
		t.Fatalf("list = %d", st)
	}
	found := false
	for _, h := range list.Webhooks {
		found = found || h.Name == name
		if h.Secret != "" {
			t.Errorf("the list shows %s's secret", h.Name)
		}
	}
	if !found {
		t.Errorf("list %+v lacks %s", list, name)
	}
	load := newHookLoad(t, b.Addr())
	load.run(3)
	sent := map[string]bool{}
	for id := range load.want {
		if strings.Contains(id, ".s") {
			sent[id] = true
		}
	}
	rcv.await(t, sent)
	if st := admin.do("POST", "/api/webhooks/"+name+"/resume", nil, nil); st != http.StatusOK {
		t.Errorf("resume = %d, want 200", st)
	}
	if st := admin.do("DELETE", "/api/webhooks/"+name, nil, nil); st != http.StatusNoContent {
		t.Errorf("remove = %d, want 204", st)
	}
	if st := admin.do("DELETE", "/api/webhooks/"+name, nil, nil); st != http.StatusNotFound {
		t.Errorf("remove again = %d, want 404", st)
	}
}

// fastHooks: the receiver on loopback allowed, quick polls and retries.
func fastHooks(c *Config) {
	c.SignupRate, c.RestSendRate = 0, 0
	c.Webhooks.Allow, c.Webhooks.Poll = "127.0.0.1", 50*time.Millisecond
	c.Webhooks.BackoffMin, c.Webhooks.BackoffMax = 10*time.Millisecond, 200*time.Millisecond
}

func TestWebhookAdmin(t *testing.T) {
	m := MustOpenMain(t, fastHooks)
	testWebhookAdmin(t, m, m)
}

func TestClusterWebhookAdmin(t *testing.T) {
	env := needCluster(t)
	testWebhookAdmin(t, startNode(t, env, "a", fastHooks), startNode(t, env, "b", fastHooks))
}
