package redis_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/redis"
	"parley/servicetest"
)

// revoked is one call of HotConfig.OnRevoke.
type revoked struct {
	user string
	hash []byte
}

// revokeNode is a HotStore whose OnRevoke calls arrive on revoked.
type revokeNode struct {
	pg      *postgres.Store
	hot     *redis.HotStore
	reg     *prometheus.Registry
	revoked chan revoked
}

func openRevokeNode(t *testing.T, dbURL string, rdb *goredis.Client, prefix string) revokeNode {
	t.Helper()
	pg, err := postgres.Open(context.Background(), postgres.Config{URL: dbURL})
	if err != nil {
		t.Fatalf("postgres.Open() error = %v", err)
	}
	n := revokeNode{pg: pg, reg: prometheus.NewRegistry(), revoked: make(chan revoked, 16)}
	n.hot = redis.NewHotStore(pg, rdb, redis.HotConfig{Prefix: prefix, Registerer: n.reg, OnRevoke: func(user string, hash []byte) {
		n.revoked <- revoked{user, hash}
	}})
	t.Cleanup(func() { n.hot.Close() })
	return n
}

func mustToken(t *testing.T, s parley.Store, u parley.User, hash string) []byte {
	t.Helper()
	now := parley.Now()
	if err := s.CreateToken(context.Background(), parley.Token{Hash: []byte(hash), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatalf("CreateToken(%q) error = %v", hash, err)
	}
	return []byte(hash)
}

// tokenCode is the error code of TokenUser(hash) now ("" for a token that
// works).
func tokenCode(s parley.Store, hash []byte) string {
	_, _, err := s.TokenUser(context.Background(), hash, parley.Now())
	return parley.ErrorCode(err)
}

// TestRevocationTwoNodes: a token revoked on node A, which node B has in
// memory, is refused by B as soon as A's revocation returns, and both
// nodes' OnRevoke hear of it; revoking all of a user's tokens leaves other
// users' alone.
func TestRevocationTwoNodes(t *testing.T) {
	rdb, prefix := testClient(t)
	dbURL := pgtest.Schema(t)
	a, b := openRevokeNode(t, dbURL, rdb, prefix), openRevokeNode(t, dbURL, rdb, prefix)
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	bob := parleytest.MustCreateUser(t, a.hot, "bob")
	ann1, ann2, ann3 := mustToken(t, a.hot, ann, "ann 1"), mustToken(t, a.hot, ann, "ann 2"), mustToken(t, a.hot, ann, "ann 3")
	bob1 := mustToken(t, a.hot, bob, "bob 1")
	for _, n := range []revokeNode{a, b} {
		for _, h := range [][]byte{ann1, ann2, ann3, bob1} {
			if code := tokenCode(n.hot, h); code != "" {
				t.Fatalf("TokenUser(%q) = %s before any revocation", h, code)
			}
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		revoke func() error
		want   revoked
		valid  [][]byte
		gone   [][]byte
	}{
		{"one token", func() error { return a.hot.RevokeToken(ctx, ann1) }, revoked{ann.ID, ann1},
			[][]byte{ann2, ann3, bob1}, [][]byte{ann1}},
		{"all of a user's", func() error { return a.hot.RevokeUserTokens(ctx, ann.ID) }, revoked{ann.ID, nil},
			[][]byte{bob1}, [][]byte{ann1, ann2, ann3}},
	} {
		if err := tc.revoke(); err != nil {
			t.Fatalf("%s: revoke: %v", tc.name, err)
		}
		for _, n := range []struct {
			name string
			revokeNode
		}{{"A", a}, {"B", b}} {
			for _, h := range tc.gone {
				if code := tokenCode(n.hot, h); code != parley.CodeUnauthorized {
					t.Errorf("%s: node %s TokenUser(%q) right after the revocation = %q, want %s", tc.name, n.name, h, code, parley.CodeUnauthorized)
				}
			}
			for _, h := range tc.valid {
				if code := tokenCode(n.hot, h); code != "" {
					t.Errorf("%s: node %s TokenUser(%q) = %s, want it working", tc.name, n.name, h, code)
				}
			}
			if got := <-n.revoked; got.user != tc.want.user || !bytes.Equal(got.hash, tc.want.hash) {
				t.Errorf("%s: node %s OnRevoke(%s, %q), want (%s, %q)", tc.name, n.name, got.user, got.hash, tc.want.user, tc.want.hash)
			}
		}
	}
}

// revocationEvents reads parley_token_revocations_total{event}.
func revocationEvents(t *testing.T, reg *prometheus.Registry, event string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "parley_token_revocations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "event" && l.GetValue() == event {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("parley_token_revocations_total{event=%q} is not registered", event)
	return 0
}

// TestRevocationSubscriptionLost: while a node cannot hear revocations
// (Redis died), it serves no token from memory, so a token revoked
// meanwhile elsewhere is refused; once the subscription is back the node
// has forgotten what it held and keeps tokens in memory again.
func TestRevocationSubscriptionLost(t *testing.T) {
	srv := servicetest.StartRedis(t)
	rdb, err := redis.NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	const prefix = "parley:"
	n := openRevokeNode(t, pgtest.Schema(t), rdb, prefix)
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	lost, kept := mustToken(t, n.hot, ann, "revoked while deaf"), mustToken(t, n.hot, ann, "kept")
	for _, h := range [][]byte{lost, kept} {
		if code := tokenCode(n.hot, h); code != "" {
			t.Fatalf("TokenUser(%q) = %s, want it working", h, code)
		}
	}
	hits := func() float64 { return hotRequests(t, n.reg, "token", "hit") }
	if before := hits(); tokenCode(n.hot, kept) != "" || hits() != before+1 {
		t.Fatalf("a warm token was not served from memory")
	}

	srv.Kill()
	parleytest.Eventually(t, 20*time.Second, func() bool { return revocationEvents(t, n.reg, "resync") >= 1 },
		"the node did not notice in 20 s that Redis died")
	// Another node revokes it, and its message cannot reach this one.
	if err := n.pg.RevokeToken(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	if code := tokenCode(n.hot, lost); code != parley.CodeUnauthorized {
		t.Errorf("TokenUser(revoked while Redis was down) = %q, want %s", code, parley.CodeUnauthorized)
	}

	srv.Start()
	// A revocation message that this node acknowledges: it is subscribed
	// again, and has applied the subscription before it.
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node did not subscribe again in 20 s")
		}
		id := parley.NewID()
		if got, err := rdb.Publish(ctx, prefix+"revoked", `0-0 {"id":"`+id+`","user":"nobody"}`).Result(); err != nil || got == 0 {
			continue
		}
		if err := rdb.BLPop(ctx, 5*time.Second, prefix+"revoked:"+id).Err(); err != nil {
			t.Fatalf("no acknowledgement of a revocation: %v", err)
		}
		break
	}
	if code := tokenCode(n.hot, lost); code != parley.CodeUnauthorized {
		t.Errorf("TokenUser(revoked while Redis was down) after it is back = %q, want %s", code, parley.CodeUnauthorized)
	}
	if code := tokenCode(n.hot, kept); code != "" {
		t.Errorf("TokenUser(kept) = %q, want it working", code)
	}
	if before := hits(); tokenCode(n.hot, kept) != "" || hits() != before+1 {
		t.Errorf("once subscribed again, a warm token was not served from memory")
	}
}

// TestRevocationPublishRetried: a revocation that cannot be published
// (Redis is down) is published once Redis is back, so that another node,
// hears of it and ends its sessions.
func TestRevocationPublishRetried(t *testing.T) {
	srv := servicetest.StartRedis(t)
	rdb, err := redis.NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	dbURL := pgtest.Schema(t)
	a, b := openRevokeNode(t, dbURL, rdb, "parley:"), openRevokeNode(t, dbURL, rdb, "parley:")
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	tok := mustToken(t, a.hot, ann, "ann 1")

	srv.Kill()
	if err := a.hot.RevokeToken(context.Background(), tok); err != nil {
		t.Fatalf("RevokeToken with Redis down: %v, want it revoked in PostgreSQL", err)
	}
	if code := tokenCode(a.hot, tok); code != parley.CodeUnauthorized {
		t.Errorf("node A TokenUser(revoked) = %q, want %s", code, parley.CodeUnauthorized)
	}
	srv.Start()
	select {
	case got := <-b.revoked:
		if got.user != ann.ID || !bytes.Equal(got.hash, tok) {
			t.Errorf("node B OnRevoke(%s, %q), want (%s, %q)", got.user, got.hash, ann.ID, tok)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node B did not hear of the revocation 30 s after Redis came back")
	}
	// A counts the retry once its publish returns, which waits for B's
	// acknowledgement: after B heard of it.
	parleytest.Poll(10*time.Second, func() bool { return revocationEvents(t, a.reg, "retried") >= 1 })
	if n := revocationEvents(t, a.reg, "retried"); n != 1 {
		t.Errorf("node A retried %v publishes, want 1", n)
	}
}

// cutProxy is a TCP proxy to Redis that a test can cut (every connection
// closed, none accepted) and restore on the same address.
type cutProxy struct {
	t      *testing.T
	target string
	addr   string
	wg     sync.WaitGroup // the accept loop and the copies

	mu    sync.Mutex // guards the following fields
	ln    net.Listener
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, target: target}
	p.listen("127.0.0.1:0")
	p.addr = p.ln.Addr().String()
	t.Cleanup(func() {
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Go(func() { io.Copy(up, c); up.Close() })
			p.wg.Go(func() { io.Copy(c, up); c.Close() })
		}
	})
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore() { p.listen(p.addr) }

// TestRevocationReplayedAfterFault: a node that cannot hear Redis while
// another node revokes a token refuses the token meanwhile (from
// PostgreSQL), and once it hears Redis again it replays the revocation
// from the stream, so that the sessions the token opened there end too.
func TestRevocationReplayedAfterFault(t *testing.T) {
	rdb, prefix := testClient(t)
	opt, err := goredis.ParseURL(os.Getenv("PARLEY_TEST_REDIS"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, opt.Addr)
	opt.Addr = proxy.addr
	cut := goredis.NewClient(opt)
	defer cut.Close()
	dbURL := pgtest.Schema(t)
	a, b := openRevokeNode(t, dbURL, rdb, prefix), openRevokeNode(t, dbURL, cut, prefix)
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	tok := mustToken(t, a.hot, ann, "ann 1")
	if code := tokenCode(b.hot, tok); code != "" {
		t.Fatalf("node B TokenUser = %q, want it working", code)
	}

	proxy.cut()
	parleytest.Eventually(t, 20*time.Second, func() bool { return revocationEvents(t, b.reg, "resync") >= 1 },
		"node B did not notice in 20 s that it lost Redis")
	if err := a.hot.RevokeToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if got := <-a.revoked; got.user != ann.ID {
		t.Errorf("node A OnRevoke(%s), want %s", got.user, ann.ID)
	}
	if code := tokenCode(b.hot, tok); code != parley.CodeUnauthorized {
		t.Errorf("node B, deaf to Redis, TokenUser(revoked) = %q, want %s", code, parley.CodeUnauthorized)
	}
	select {
	case got := <-b.revoked:
		t.Fatalf("node B OnRevoke(%s) while it cannot hear Redis", got.user)
	default:
	}

	proxy.restore()
	select {
	case got := <-b.revoked:
		if got.user != ann.ID || !bytes.Equal(got.hash, tok) {
			t.Errorf("node B OnRevoke(%s, %q), want (%s, %q)", got.user, got.hash, ann.ID, tok)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node B did not replay the revocation 30 s after it could reach Redis again")
	}
	if code := tokenCode(b.hot, tok); code != parley.CodeUnauthorized {
		t.Errorf("node B TokenUser(revoked) after the replay = %q, want %s", code, parley.CodeUnauthorized)
	}
}
