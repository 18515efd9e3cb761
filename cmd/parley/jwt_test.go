package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"parley/chat"
	"parley/stomp"
)

const (
	jwtTestIssuer   = "https://id.example.test"
	jwtTestAudience = "parley-e2e"
)

// idProvider is an identity provider of the tests: signing keys, and a
// JWKS server serving the public halves of those it is told to.
type idProvider struct {
	t   *testing.T
	srv *httptest.Server

	mu     sync.Mutex     // guards the following fields
	keys   map[string]any // kid -> private key
	served []string       // the kids in the JWKS
}

func newIDProvider(t *testing.T) *idProvider {
	p := &idProvider{t: t, keys: map[string]any{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		var set jose.JSONWebKeySet
		for _, kid := range p.served {
			k := jose.JSONWebKey{Key: p.keys[kid], KeyID: kid, Use: "sig"}
			set.Keys = append(set.Keys, k.Public())
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// addKey makes a key: RSA for a kid starting with "rs", else P-256.
func (p *idProvider) addKey(kid string) {
	var key any
	var err error
	if strings.HasPrefix(kid, "rs") {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.keys[kid] = key
	p.mu.Unlock()
}

// serve makes the JWKS hold exactly kids (a rotation when they change).
func (p *idProvider) serve(kids ...string) {
	p.mu.Lock()
	p.served = kids
	p.mu.Unlock()
}

// token signs a token of sub, named name, that expires at exp.
func (p *idProvider) token(kid, sub, name string, exp time.Time) string {
	p.t.Helper()
	return p.tokenIssued(kid, sub, name, exp, time.Now())
}

// tokenIssued is token with iat; a zero iat leaves the claim out.
func (p *idProvider) tokenIssued(kid, sub, name string, exp, iat time.Time) string {
	p.t.Helper()
	p.mu.Lock()
	key := p.keys[kid]
	p.mu.Unlock()
	alg := jose.ES256
	if _, ok := key.(*rsa.PrivateKey); ok {
		alg = jose.RS256
	}
	sg, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		p.t.Fatal(err)
	}
	claims := map[string]any{"iss": jwtTestIssuer, "aud": jwtTestAudience, "sub": sub, "exp": exp.Unix()}
	if !iat.IsZero() {
		claims["iat"] = iat.Unix()
	}
	if name != "" {
		claims["preferred_username"] = name
	}
	tok, err := jwt.Signed(sg).Claims(claims).Serialize()
	if err != nil {
		p.t.Fatal(err)
	}
	return tok
}

// flags are the serve flags of JWT sign-in against p.
func (p *idProvider) flags() []string {
	return []string{"--jwt-jwks-url", p.srv.URL, "--jwt-issuer", jwtTestIssuer, "--jwt-audience", jwtTestAudience}
}

// config sets c's JWT sign-in to p's.
func (p *idProvider) config(c *Config) {
	c.JWT.JWKSURL, c.JWT.Issuer, c.JWT.Audience = p.srv.URL, jwtTestIssuer, jwtTestAudience
}

// dialStompToken connects over transport to addr and sends CONNECT with
// token in header (passcode, or Authorization as "Bearer <token>"),
// leaving the answer to the caller.
func dialStompToken(t testing.TB, transport, addr, header, token string) *stompClient {
	t.Helper()
	var conn net.Conn
	if transport == "websocket" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
		if err != nil {
			t.Fatalf("websocket dial: %v", err)
		}
		conn = websocket.NetConn(context.Background(), ws, websocket.MessageText)
	} else {
		var err error
		if conn, err = net.Dial("tcp", addr); err != nil {
			t.Fatalf("tcp dial: %v", err)
		}
	}
	t.Cleanup(func() { conn.Close() })
	c := &stompClient{t: t, conn: conn, r: stomp.NewReader(conn, stomp.Limits{})}
	if header == "Authorization" {
		token = "Bearer " + token
	}
	c.send("CONNECT\naccept-version:1.2\nhost:parley\nheart-beat:10000,10000\n" + header + ":" + token + "\n\n\x00")
	return c
}

// TestJWTServe: a real `parley serve` with JWT sign-in against a JWKS
// served by the test. JWT users are made on first sight (REST), meet in a
// room over REST, STOMP over WebSocket (the token in passcode and in
// Authorization) and raw TCP, and receive each other's messages; a token
// of a key the provider rotated in works without a restart; a session
// ends with ERROR when its token's exp passes; bad tokens are refused by
// both transports.
func TestJWTServe(t *testing.T) {
	idp := newIDProvider(t)
	idp.addKey("rs-1")
	idp.addKey("es-2")
	idp.serve("rs-1")
	p := startServeProcess(t, append([]string{"--data", t.TempDir(), "--sync", "normal", "--stomp-addr", "127.0.0.1:0"}, idp.flags()...)...)
	hour := time.Now().Add(time.Hour)

	ada := &client{t: t, base: "http://" + p.addr, token: idp.token("rs-1", "sub-ada", "ada", hour)}
	bob := &client{t: t, base: "http://" + p.addr, token: idp.token("rs-1", "sub-bob", "bob", hour)}
	var me user
	if st := ada.do("GET", "/api/me", nil, &me); st != http.StatusOK || me.ID != chat.ExternalUserID(jwtTestIssuer, "sub-ada") || me.Name != "ada" {
		t.Fatalf("GET /api/me with ada's JWT = %d %+v, want 200 and the derived id", st, me)
	}
	var r room
	if st := ada.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "jwt"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("bob joins: %d", st)
	}

	// bob listens over WebSocket (passcode) and raw TCP (Authorization).
	ws := dialStompToken(t, "websocket", p.addr, "passcode", bob.token)
	ws.expect("CONNECTED", "user-name:bob")
	ws.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nreceipt:s\n\n\x00")
	ws.expect("RECEIPT", "receipt-id:s")
	tcp := dialStompToken(t, "tcp", p.stompAddr, "Authorization", bob.token)
	tcp.expect("CONNECTED", "user-name:bob")
	tcp.send("SUBSCRIBE\nid:q\ndestination:/user/queue/messages\nreceipt:s\n\n\x00")
	tcp.expect("RECEIPT", "receipt-id:s")

	// ada sends over REST, then over STOMP (WebSocket, Authorization).
	if st := ada.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "over rest"}, nil); st != http.StatusCreated {
		t.Fatalf("REST send: %d", st)
	}
	ws.expect("MESSAGE", "seq:1", "sender-name:ada")
	tcp.expect("MESSAGE", "seq:1", "sender-name:ada")
	as := dialStompToken(t, "websocket", p.addr, "Authorization", ada.token)
	as.expect("CONNECTED", "user-name:ada")
	as.send("SEND\ndestination:/app/rooms." + r.ID + "\nreceipt:7\n\nover stomp\x00")
	as.expect("RECEIPT", "receipt-id:7", "seq:2")
	if f := ws.expect("MESSAGE", "seq:2", "sender-name:ada"); string(f.Body) != "over stomp" {
		t.Errorf("bob got %q, want %q", f.Body, "over stomp")
	}
	tcp.expect("MESSAGE", "seq:2")

	// A JWT user has no password: a JWT of an old sign-in does not
	// delete the account (checkJWTDeletion); and Parley cannot revoke a JWT.
	var e apiError
	adaOld := &client{t: t, base: ada.base, token: idp.tokenIssued("rs-1", "sub-ada", "ada", hour, time.Now().Add(-time.Hour))}
	if st := adaOld.do("DELETE", "/api/me", map[string]string{"password": "guess"}, &e); st != http.StatusForbidden || e.Error.Code != "forbidden" {
		t.Errorf("DELETE /api/me as a JWT user of an hour-old sign-in = %d %+v, want 403 forbidden", st, e)
	}
	if st := ada.do("DELETE", "/api/tokens/current", nil, &e); st != http.StatusBadRequest || e.Error.Code != "invalid" {
		t.Errorf("DELETE /api/tokens/current with a JWT = %d %+v, want 400 invalid", st, e)
	}
	if st := ada.do("GET", "/api/me", nil, nil); st != http.StatusOK {
		t.Errorf("GET /api/me after both refusals = %d, want 200", st)
	}

	// The provider rotates to a new key: its tokens work at once.
	idp.serve("es-2")
	cy := &client{t: t, base: "http://" + p.addr, token: idp.token("es-2", "sub-cy", "cyril", hour)}
	if st := cy.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("a token of the rotated-in key: join = %d, want 201", st)
	}
	cs := dialStompToken(t, "tcp", p.stompAddr, "passcode", cy.token)
	cs.expect("CONNECTED", "user-name:cyril")
	cs.send("SEND\ndestination:/app/rooms." + r.ID + "\nreceipt:8\n\nafter the rotation\x00")
	cs.expect("RECEIPT", "receipt-id:8", "seq:3")
	ws.expect("MESSAGE", "seq:3", "sender-name:cyril")

	// A token that expires in a few seconds: its session ends then.
	soon := idp.token("es-2", "sub-dee", "dee", time.Now().Add(3*time.Second))
	ds := dialStompToken(t, "websocket", p.addr, "passcode", soon)
	ds.expect("CONNECTED", "user-name:dee")
	if f := ds.expect("ERROR", "code:unauthorized"); !strings.Contains(string(f.Body), "expired") {
		t.Errorf("the expired session's ERROR = %v, want it to say expired", f)
	}

	// Refusals, by both transports: a key the JWKS no longer has, another
	// audience, alg none.
	for _, tc := range []struct{ name, token string }{
		{"rotated-out key", idp.token("rs-1", "sub-eve", "eve", hour)},
		{"alg none", unsignedJWT(map[string]any{"alg": "none"}, map[string]any{"iss": jwtTestIssuer, "aud": jwtTestAudience, "sub": "sub-eve", "exp": hour.Unix()})},
		{"forged", ada.token[:strings.LastIndex(ada.token, ".")] + ".c2lnbmF0dXJl"},
	} {
		c := &client{t: t, base: "http://" + p.addr, token: tc.token}
		var e apiError
		if st := c.do("GET", "/api/me", nil, &e); st != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
			t.Errorf("%s: GET /api/me = %d %+v, want 401 unauthorized", tc.name, st, e)
		}
		sc := dialStompToken(t, "websocket", p.addr, "passcode", tc.token)
		sc.expect("ERROR", "code:unauthorized")
	}

	// Parley's own password sign-in still works beside JWTs.
	pw := newClient(t, p.addr)
	creds := map[string]string{"name": "local", "password": "correct horse"}
	if st := pw.do("POST", "/api/users", creds, nil); st != http.StatusCreated {
		t.Fatalf("sign up: %d", st)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if st := pw.do("POST", "/api/tokens", creds, &tok); st != http.StatusCreated {
		t.Fatalf("log in: %d", st)
	}
	pw.token = tok.Token
	if st := pw.do("GET", "/api/me", nil, nil); st != http.StatusOK {
		t.Errorf("GET /api/me with a Parley token = %d", st)
	}
}

// unsignedJWT is a token of header and claims with a dummy signature.
func unsignedJWT(header, claims map[string]any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	return enc(h) + "." + enc(c) + "." + enc([]byte("sig"))
}

// TestClusterJWTFirstSight: on three cluster nodes, each new identity
// whose first requests hit two nodes at once becomes one user (the same id
// and name on both, one account made); JWT users on different nodes talk
// in a room; a session on another node ends when its token expires.
func TestClusterJWTFirstSight(t *testing.T) {
	env := needCluster(t)
	idp := newIDProvider(t)
	idp.addKey("es-1")
	idp.serve("es-1")
	nodes := []*Main{startNode(t, env, "a", idp.config), startNode(t, env, "b", idp.config), startNode(t, env, "c", idp.config)}
	hour := time.Now().Add(time.Hour)

	const identities = 5
	for i := range identities {
		tok := idp.token("es-1", fmt.Sprintf("race-%d", i), "racer", hour)
		var wg sync.WaitGroup
		start := make(chan struct{})
		got := make([]user, 2)
		status := make([]int, 2)
		for j, m := range []*Main{nodes[i%3], nodes[(i+1)%3]} {
			c := &client{t: t, base: "http://" + m.Addr(), token: tok}
			wg.Go(func() {
				<-start
				status[j] = c.do("GET", "/api/me", nil, &got[j])
			})
		}
		close(start)
		wg.Wait()
		want := chat.ExternalUserID(jwtTestIssuer, fmt.Sprintf("race-%d", i))
		if status[0] != http.StatusOK || status[1] != http.StatusOK || got[0] != got[1] || got[0].ID != want {
			t.Errorf("identity %d seen by two nodes at once = %d %+v and %d %+v, want 200 and one user %s", i, status[0], got[0], status[1], got[1], want)
		}
	}
	made := 0.0
	for _, m := range nodes {
		made += metric(t, m, "parley_jwt_users_provisioned_total")
	}
	if made != identities {
		t.Errorf("accounts made over the nodes = %v, want %d (one per identity)", made, identities)
	}

	// Two JWT users on different nodes meet in a room.
	ada := &client{t: t, base: "http://" + nodes[0].Addr(), token: idp.token("es-1", "sub-ada", "ada", hour)}
	bob := &client{t: t, base: "http://" + nodes[1].Addr(), token: idp.token("es-1", "sub-bob", "bob", hour)}
	var r room
	if st := ada.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "jwt"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("bob joins: %d", st)
	}
	bs := dialStompToken(t, "websocket", nodes[1].Addr(), "passcode", bob.token)
	bs.expect("CONNECTED", "user-name:bob")
	bs.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nreceipt:s\n\n\x00")
	bs.expect("RECEIPT", "receipt-id:s")
	as := dialStompToken(t, "websocket", nodes[0].Addr(), "Authorization", ada.token)
	as.expect("CONNECTED", "user-name:ada")
	as.send("SEND\ndestination:/app/rooms." + r.ID + "\nreceipt:1\n\nacross nodes\x00")
	as.expect("RECEIPT", "receipt-id:1", "seq:1")
	if f := bs.expect("MESSAGE", "seq:1", "sender-name:ada"); string(f.Body) != "across nodes" {
		t.Errorf("bob got %q on node b", f.Body)
	}

	// A short token's session on node c ends when it expires.
	soon := idp.token("es-1", "sub-dee", "dee", time.Now().Add(3*time.Second))
	ds := dialStompToken(t, "websocket", nodes[2].Addr(), "passcode", soon)
	ds.expect("CONNECTED", "user-name:dee")
	if f := ds.expect("ERROR", "code:unauthorized"); !strings.Contains(string(f.Body), "expired") {
		t.Errorf("the expired session's ERROR = %v, want it to say expired", f)
	}
}

// checkJWTDeletion: a JWT account (no password) deletes itself with a
// JWT issued within the sign-in window, and not with an older one or one
// without iat (403 "sign in again", nothing changes); afterwards no JWT
// of that identity signs in. a and b are two nodes' addresses (the same
// node twice on one).
func checkJWTDeletion(t *testing.T, idp *idProvider, kid, a, b string) {
	t.Helper()
	hour := time.Now().Add(time.Hour)
	old := time.Now().Add(-chat.DefaultSignInWindow - time.Minute)
	zed := &client{t: t, base: "http://" + a, token: idp.tokenIssued(kid, "sub-zed", "zed", hour, old)}
	var me user
	if st := zed.do("GET", "/api/me", nil, &me); st != http.StatusOK {
		t.Fatalf("GET /api/me with zed's JWT: %d", st)
	}
	for _, tok := range []string{zed.token, idp.tokenIssued(kid, "sub-zed", "zed", hour, time.Time{})} {
		c := &client{t: t, base: "http://" + b, token: tok}
		var e struct {
			Error struct{ Code, Message string }
		}
		if st := c.do("DELETE", "/api/me", map[string]any{"password": "anything"}, &e); st != http.StatusForbidden || !strings.Contains(e.Error.Message, "sign in again to delete this account") {
			t.Errorf("DELETE /api/me with a JWT of an old sign-in (or none said) = %d %+v, want 403 sign in again", st, e)
		}
	}
	if st := zed.do("GET", "/api/me", nil, nil); st != http.StatusOK {
		t.Fatalf("GET /api/me after the refusals: %d, want 200 (nothing changed)", st)
	}
	fresh := &client{t: t, base: "http://" + b, token: idp.token(kid, "sub-zed", "zed", hour)}
	if st := fresh.do("DELETE", "/api/me", map[string]any{}, nil); st != http.StatusNoContent {
		t.Fatalf("DELETE /api/me with a fresh JWT: %d, want 204", st)
	}
	for _, c := range []*client{zed, fresh} {
		if st := c.do("GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
			t.Errorf("GET /api/me with a JWT of the deleted account: %d, want 401", st)
		}
	}
}

// TestJWTDeleteAccount: checkJWTDeletion on one node (SQLite), and
// --delete-signin-window.
func TestJWTDeleteAccount(t *testing.T) {
	idp := newIDProvider(t)
	idp.addKey("es-1")
	idp.serve("es-1")
	p := startServeProcess(t, append([]string{"--data", t.TempDir(), "--sync", "normal"}, idp.flags()...)...)
	checkJWTDeletion(t, idp, "es-1", p.addr, p.addr)

	// --delete-signin-window widens it: a sign-in an hour old will do.
	q := startServeProcess(t, append([]string{"--data", t.TempDir(), "--sync", "normal", "--delete-signin-window", "2h"}, idp.flags()...)...)
	c := &client{t: t, base: "http://" + q.addr, token: idp.tokenIssued("es-1", "sub-old", "old", time.Now().Add(time.Hour), time.Now().Add(-time.Hour))}
	if st := c.do("DELETE", "/api/me", map[string]any{}, nil); st != http.StatusNoContent {
		t.Errorf("DELETE /api/me with a JWT an hour old and --delete-signin-window 2h: %d, want 204", st)
	}
}

// TestClusterJWTDeleteAccount: checkJWTDeletion over two cluster nodes
// (PostgreSQL): the account is seen on one and deleted on the other.
func TestClusterJWTDeleteAccount(t *testing.T) {
	env := needCluster(t)
	idp := newIDProvider(t)
	idp.addKey("es-1")
	idp.serve("es-1")
	a, b := startNode(t, env, "a", idp.config), startNode(t, env, "b", idp.config)
	checkJWTDeletion(t, idp, "es-1", a.Addr(), b.Addr())
}
