package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"parley"
)

// apikey runs `parley apikey args...` against the store of --data or
// --store and returns what it printed on stdout.
func apikey(t *testing.T, args ...string) string {
	t.Helper()
	var out, errs bytes.Buffer
	if err := run(context.Background(), append([]string{"apikey"}, args...), &out, &errs); err != nil {
		t.Fatalf("parley apikey %s: %v\n%s", strings.Join(args, " "), err, errs.String())
	}
	return strings.TrimSpace(out.String())
}

// storeFlags are the flags that name m's store to `parley apikey`.
func storeFlags(m *Main) []string {
	if m.Config.Store != "" {
		return []string{"--store", m.Config.Store}
	}
	return []string{"--data", m.Config.Data}
}

// testAPIKey: a key created by `parley apikey create` beside the running
// node(s) works at once on b over REST (idempotent posts, scopes refused
// with 403) and STOMP; its bot shows as a bot among the room's members;
// `parley apikey revoke` refuses it at once over REST and ends its live
// STOMP session on b within --apikey-watch.
func testAPIKey(t *testing.T, a, b, c *Main) {
	alice, aliceUser := mustSignUp(t, a.Addr(), "a"+parleyID())
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "deploys"}, &r); st != http.StatusCreated {
		t.Fatalf("create room = %d", st)
	}
	name := "ci" + parleyID()
	token := apikey(t, append([]string{"create", "--name", name, "--scopes", "post,rooms", "--bot", name + "-bot"}, storeFlags(a)...)...)
	if !strings.HasPrefix(token, "pk_") {
		t.Fatalf("apikey create printed %q, want a pk_ token", token)
	}
	bot := &client{t: t, base: "http://" + b.Addr(), token: token}
	if st := bot.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("bot joins = %d", st)
	}
	msg := map[string]string{"body": "deploy done", "client_id": "d-1"}
	var first, again parley.Message
	if st := bot.do("POST", "/api/rooms/"+r.ID+"/messages", msg, &first); st != http.StatusCreated {
		t.Fatalf("bot posts = %d", st)
	}
	if st := bot.do("POST", "/api/rooms/"+r.ID+"/messages", msg, &again); st != http.StatusOK || again.Seq != first.Seq {
		t.Errorf("bot posts again with the same client_id = %d seq %d, want 200 seq %d", st, again.Seq, first.Seq)
	}
	if st := bot.do("GET", "/api/rooms/"+r.ID+"/messages", nil, nil); st != http.StatusForbidden {
		t.Errorf("bot reads history without the scope = %d, want 403", st)
	}
	var members struct {
		Members []struct {
			User struct {
				Name string
				Bot  bool
			}
		}
	}
	if st := alice.do("GET", "/api/rooms/"+r.ID+"/members", nil, &members); st != http.StatusOK {
		t.Fatalf("members = %d", st)
	}
	bots := 0
	for _, mb := range members.Members {
		if mb.User.Bot {
			bots++
			if mb.User.Name != name+"-bot" {
				t.Errorf("bot member named %q, want %q", mb.User.Name, name+"-bot")
			}
		}
	}
	if bots != 1 {
		t.Errorf("members list %+v: %d bots, want 1", members, bots)
	}

	// The bot fills a room of its own: it creates it on b and adds alice,
	// who finds it on c.
	var own room
	if st := bot.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "bot's"}, &own); st != http.StatusCreated {
		t.Fatalf("bot creates a room = %d", st)
	}
	if st := bot.do("POST", "/api/rooms/"+own.ID+"/members/"+aliceUser.ID, nil, nil); st != http.StatusCreated {
		t.Fatalf("bot adds alice = %d", st)
	}
	aliceOnC := &client{t: t, base: "http://" + c.Addr(), token: alice.token}
	if st := aliceOnC.do("GET", "/api/rooms/"+own.ID, nil, nil); st != http.StatusOK {
		t.Errorf("alice reads the room the bot added her to, on another node = %d, want 200", st)
	}

	sc := dialStomp(t, b, "websocket", token)
	sc.send("SEND\ndestination:/app/rooms." + r.ID + "\nreceipt:m\n\nover STOMP\x00")
	sc.expect("RECEIPT", "receipt-id:m")
	if out := apikey(t, append([]string{"list"}, storeFlags(a)...)...); !strings.Contains(out, name) {
		t.Errorf("apikey list = %q, want %s in it", out, name)
	}

	apikey(t, append([]string{"revoke", "--name", name}, storeFlags(a)...)...)
	if st := bot.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "late"}, nil); st != http.StatusUnauthorized {
		t.Errorf("post with a revoked key = %d, want 401", st)
	}
	expectEnded(t, sc)
}

// testHook: a room-bound key (parley apikey create --room) is the room's
// incoming webhook: POST /api/hooks/{key} posts as its bot, with JSON
// (Slack's "text", idempotent with a client_id) or text/plain, and the
// key is refused in any other room; an unknown hook is 404.
func testHook(t *testing.T, a, b *Main) {
	alice, _ := mustSignUp(t, a.Addr(), "h"+parleyID())
	var r, other room
	for _, rm := range []*room{&r, &other} {
		if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "alerts"}, rm); st != http.StatusCreated {
			t.Fatalf("create room = %d", st)
		}
	}
	name := "hook" + parleyID()
	key := apikey(t, append([]string{"create", "--name", name, "--scopes", "post,history", "--room", r.ID}, storeFlags(a)...)...)
	anon := &client{t: t, base: "http://" + b.Addr()}
	var m1, again parley.Message
	body := map[string]string{"text": "disk 91% on db-1", "client_id": "alert-7"}
	if st := anon.do("POST", "/api/hooks/"+key, body, &m1); st != http.StatusCreated || m1.Body != body["text"] || m1.RoomID != r.ID {
		t.Fatalf("hook post = %d %+v, want 201 in the room", st, m1)
	}
	if st := anon.do("POST", "/api/hooks/"+key, body, &again); st != http.StatusOK || again.Seq != m1.Seq {
		t.Errorf("hook post again = %d seq %d, want 200 seq %d", st, again.Seq, m1.Seq)
	}
	req, _ := http.NewRequest("POST", anon.base+"/api/hooks/"+key, strings.NewReader("plain words"))
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("hook post text/plain = %d, want 201", resp.StatusCode)
	}
	var page struct{ Messages []parley.Message }
	if st := alice.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page); st != http.StatusOK || len(page.Messages) != 2 || page.Messages[0].Body != "plain words" {
		t.Errorf("room history = %d %+v, want the two hook posts", st, page.Messages)
	}
	if st := anon.do("POST", "/api/hooks/pk_nope_nope", body, nil); st != http.StatusNotFound {
		t.Errorf("unknown hook = %d, want 404", st)
	}
	bot := &client{t: t, base: anon.base, token: key}
	if st := bot.do("POST", "/api/rooms/"+other.ID+"/messages", map[string]string{"body": "x"}, nil); st != http.StatusForbidden {
		t.Errorf("hook key posting in another room = %d, want 403", st)
	}
	if st := bot.do("GET", "/api/rooms/"+r.ID+"/messages", nil, nil); st != http.StatusOK {
		t.Errorf("hook key reading its own room = %d, want 200", st)
	}
}

func TestHook(t *testing.T) {
	m := MustOpenMain(t)
	testHook(t, m, m)
}

func TestClusterHook(t *testing.T) {
	env := needCluster(t)
	testHook(t, startNode(t, env, "a"), startNode(t, env, "b"))
}

func TestAPIKey(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.APIKeyWatch = 20 * time.Millisecond })
	testAPIKey(t, m, m, m)
}

func TestClusterAPIKey(t *testing.T) {
	env := needCluster(t)
	fast := func(c *Config) { c.APIKeyWatch = 20 * time.Millisecond }
	testAPIKey(t, startNode(t, env, "a", fast), startNode(t, env, "b", fast), startNode(t, env, "c", fast))
}

// testKeyLimit: past its burst an API key is 429 with Retry-After on
// every node, counted over the cluster: its calls alternate between the
// nodes given.
func testKeyLimit(t *testing.T, nodes ...*Main) {
	name := "lim" + parleyID()
	token := apikey(t, append([]string{"create", "--name", name, "--scopes", "rooms"}, storeFlags(nodes[0])...)...)
	refused := 0
	for i := range 6 {
		bot := &client{t: t, base: "http://" + nodes[i%len(nodes)].Addr(), token: token}
		switch st := bot.do("GET", "/api/me", nil, nil); st {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("call %d = %d", i, st)
		}
	}
	// --apikey-rate 1: a burst of 2, and less than a token more while
	// the six calls run.
	if refused < 3 {
		t.Errorf("%d of 6 quick calls refused with --apikey-rate 1, want at least 3", refused)
	}
}

func TestAPIKeyLimit(t *testing.T) {
	testKeyLimit(t, MustOpenMain(t, func(c *Config) { c.APIKeyRate = 1 }))
}

func TestClusterAPIKeyLimit(t *testing.T) {
	env := needCluster(t)
	slow := func(c *Config) { c.APIKeyRate = 1 }
	testKeyLimit(t, startNode(t, env, "a", slow), startNode(t, env, "b", slow))
}
