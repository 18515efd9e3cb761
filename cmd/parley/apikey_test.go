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
func testAPIKey(t *testing.T, a, b *Main) {
	alice, _ := mustSignUp(t, a.Addr(), "a"+parleyID())
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

func TestAPIKey(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.APIKeyWatch = 20 * time.Millisecond })
	testAPIKey(t, m, m)
}

func TestClusterAPIKey(t *testing.T) {
	env := needCluster(t)
	fast := func(c *Config) { c.APIKeyWatch = 20 * time.Millisecond }
	testAPIKey(t, startNode(t, env, "a", fast), startNode(t, env, "b", fast))
}
