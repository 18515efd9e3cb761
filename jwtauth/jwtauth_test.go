package jwtauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const (
	testIssuer   = "https://id.example.test"
	testAudience = "parley"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// signer is a private key of one algorithm with its key id.
type signer struct {
	alg string
	kid string
	key any // private key, or []byte for HS256
}

func mustKey(t *testing.T, alg, kid string) signer {
	t.Helper()
	var key any
	var err error
	switch alg {
	case RS256:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case ES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case EdDSA:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case HS256:
		key = testSecret
	}
	if err != nil {
		t.Fatal(err)
	}
	return signer{alg, kid, key}
}

// public is the key's public JWK, as a JWKS serves it.
func (s signer) public() jose.JSONWebKey {
	k := jose.JSONWebKey{Key: s.key, KeyID: s.kid, Algorithm: s.alg, Use: "sig"}
	return k.Public()
}

// claims are a valid token's claims at t0.
func claims(extra map[string]any) map[string]any {
	c := map[string]any{
		"iss": testIssuer, "aud": testAudience, "sub": "user-1",
		"exp": t0.Add(time.Hour).Unix(), "iat": t0.Unix(), "nbf": t0.Unix(),
		"preferred_username": "ada",
	}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func (s signer) sign(t *testing.T, c map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if s.kid != "" {
		opts = opts.WithHeader("kid", s.kid)
	}
	sg, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(s.alg), Key: s.key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sg).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// jwksServer serves a key set that a test changes, or a failure.
type jwksServer struct {
	*httptest.Server
	mu     sync.Mutex
	body   []byte
	status int
}

func newJWKSServer(t *testing.T, keys ...signer) *jwksServer {
	t.Helper()
	j := &jwksServer{status: http.StatusOK}
	j.serve(t, keys...)
	j.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.mu.Lock()
		body, status := j.body, j.status
		j.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(j.Close)
	return j
}

// serve makes the server serve the public keys of keys.
func (j *jwksServer) serve(t *testing.T, keys ...signer) {
	t.Helper()
	var set jose.JSONWebKeySet
	for _, k := range keys {
		set.Keys = append(set.Keys, k.public())
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	j.set(http.StatusOK, b)
}

func (j *jwksServer) set(status int, body []byte) {
	j.mu.Lock()
	j.status, j.body = status, body
	j.mu.Unlock()
}

func mustVerifier(t *testing.T, cfg Config) (*Verifier, *clock) {
	t.Helper()
	c := &clock{t: t0}
	cfg.Now = c.now
	if cfg.Issuer == "" {
		cfg.Issuer = testIssuer
	}
	if cfg.Audience == "" {
		cfg.Audience = testAudience
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { v.Close() })
	return v, c
}

func (v *Verifier) fetched(result string) float64 {
	return testutil.ToFloat64(v.jwks.fetches.WithLabelValues(result))
}

func TestVerifyValid(t *testing.T) {
	rs, es, ed := mustKey(t, RS256, "rs"), mustKey(t, ES256, "es"), mustKey(t, EdDSA, "ed")
	j := newJWKSServer(t, rs, es, ed)
	v, _ := mustVerifier(t, Config{HS256Secret: testSecret, JWKSURL: j.URL})
	for _, tc := range []struct {
		name   string
		s      signer
		extra  map[string]any
		wantID Identity
	}{
		{"HS256", mustKey(t, HS256, ""), nil, Identity{testIssuer, "user-1", "ada", t0.Add(time.Hour), t0}},
		{"RS256", rs, nil, Identity{testIssuer, "user-1", "ada", t0.Add(time.Hour), t0}},
		{"ES256", es, map[string]any{"sub": "user-2"}, Identity{testIssuer, "user-2", "ada", t0.Add(time.Hour), t0}},
		{"EdDSA", ed, nil, Identity{testIssuer, "user-1", "ada", t0.Add(time.Hour), t0}},
		{"RS256 without kid", signer{RS256, "", rs.key}, nil, Identity{testIssuer, "user-1", "ada", t0.Add(time.Hour), t0}},
		{"name from name", rs, map[string]any{"preferred_username": nil, "name": "Ada L"}, Identity{testIssuer, "user-1", "Ada L", t0.Add(time.Hour), t0}},
		{"no name", rs, map[string]any{"preferred_username": nil}, Identity{testIssuer, "user-1", "", t0.Add(time.Hour), t0}},
		{"audience list", rs, map[string]any{"aud": []string{"other", testAudience}}, Identity{testIssuer, "user-1", "ada", t0.Add(time.Hour), t0}},
		{"expired within the leeway", rs, map[string]any{"exp": t0.Add(-10 * time.Second).Unix()}, Identity{testIssuer, "user-1", "ada", t0.Add(-10 * time.Second), t0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.s.sign(t, claims(tc.extra))
			got, err := v.Verify(context.Background(), tok)
			if err != nil || got != tc.wantID {
				t.Errorf("Verify = %+v, %v; want %+v", got, err, tc.wantID)
			}
		})
	}
}

// TestSignedInAt: the identity says when the user signed in, from
// auth_time, else iat, else not at all (DELETE /api/me of an account
// with no password wants a recent sign-in).
func TestSignedInAt(t *testing.T) {
	hs := mustKey(t, HS256, "")
	v, _ := mustVerifier(t, Config{HS256Secret: testSecret})
	for _, tc := range []struct {
		name  string
		extra map[string]any
		want  time.Time
	}{
		{"iat", nil, t0},
		{"auth_time", map[string]any{"auth_time": t0.Add(-time.Hour).Unix()}, t0.Add(-time.Hour)},
		{"neither", map[string]any{"iat": nil}, time.Time{}},
	} {
		got, err := v.Verify(context.Background(), hs.sign(t, claims(tc.extra)))
		if err != nil || !got.SignedInAt.Equal(tc.want) {
			t.Errorf("%s: Verify = %+v, %v; want SignedInAt %v", tc.name, got, err, tc.want)
		}
	}
}

func TestNameClaim(t *testing.T) {
	hs := mustKey(t, HS256, "")
	v, _ := mustVerifier(t, Config{HS256Secret: testSecret, NameClaim: "nick"})
	got, err := v.Verify(context.Background(), hs.sign(t, claims(map[string]any{"nick": "adal"})))
	if err != nil || got.Name != "adal" {
		t.Errorf("Verify with NameClaim nick = %+v, %v; want name adal", got, err)
	}
	got, err = v.Verify(context.Background(), hs.sign(t, claims(nil)))
	if err != nil || got.Name != "" {
		t.Errorf("Verify without the nick claim = %+v, %v; want no name (preferred_username is not nick)", got, err)
	}
}

// unsigned makes a token with the given header and claims and a
// signature of sig (raw bytes).
func unsigned(header, c map[string]any, sig []byte) string {
	h, _ := json.Marshal(header)
	p, _ := json.Marshal(c)
	enc := base64.RawURLEncoding.EncodeToString
	return enc(h) + "." + enc(p) + "." + enc(sig)
}

func TestVerifyRefused(t *testing.T) {
	rs := mustKey(t, RS256, "rs")
	other := mustKey(t, RS256, "rs") // same kid, another key: a forgery
	j := newJWKSServer(t, rs)
	pubDER, err := x509.MarshalPKIXPublicKey(&rs.key.(*rsa.PrivateKey).PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	jwkJSON, _ := json.Marshal(rs.public())

	vJWKS, _ := mustVerifier(t, Config{JWKSURL: j.URL})
	vBoth, _ := mustVerifier(t, Config{JWKSURL: j.URL, HS256Secret: testSecret})
	for _, tc := range []struct {
		name   string
		v      *Verifier
		token  string
		reason string
	}{
		{"forged signature", vJWKS, other.sign(t, claims(nil)), reasonSignature},
		{"forged HS256", vBoth, signer{HS256, "", []byte("another secret, 32 bytes or more!")}.sign(t, claims(nil)), reasonSignature},
		{"expired", vJWKS, rs.sign(t, claims(map[string]any{"exp": t0.Add(-time.Minute).Unix()})), reasonExpired},
		{"not yet valid", vJWKS, rs.sign(t, claims(map[string]any{"nbf": t0.Add(time.Minute).Unix()})), reasonNotYetValid},
		{"issued in the future", vJWKS, rs.sign(t, claims(map[string]any{"iat": t0.Add(time.Minute).Unix()})), reasonNotYetValid},
		{"wrong issuer", vJWKS, rs.sign(t, claims(map[string]any{"iss": "https://evil.test"})), reasonIssuer},
		{"wrong audience", vJWKS, rs.sign(t, claims(map[string]any{"aud": "someone-else"})), reasonAudience},
		{"no exp", vJWKS, rs.sign(t, claims(map[string]any{"exp": nil})), reasonClaims},
		{"no sub", vJWKS, rs.sign(t, claims(map[string]any{"sub": nil})), reasonClaims},
		{"alg none", vBoth, unsigned(map[string]any{"alg": "none", "typ": "JWT"}, claims(nil), []byte("x")), reasonAlgorithm},
		{"alg none, empty signature", vBoth, unsigned(map[string]any{"alg": "none"}, claims(nil), nil), reasonMalformed},
		{"alg not pinned: HS256 without a secret", vJWKS, signer{HS256, "rs", pubPEM}.sign(t, claims(nil)), reasonAlgorithm},
		{"key confusion: HS256 over the RSA public key (PEM)", vBoth, signer{HS256, "rs", pubPEM}.sign(t, claims(nil)), reasonSignature},
		{"key confusion: HS256 over the RSA public key (DER)", vBoth, signer{HS256, "rs", pubDER}.sign(t, claims(nil)), reasonSignature},
		{"key confusion: HS256 over the JWK", vBoth, signer{HS256, "rs", jwkJSON}.sign(t, claims(nil)), reasonSignature},
		{"RS256 token under an ES256 key id", vJWKS, signer{ES256, "rs", mustKey(t, ES256, "").key}.sign(t, claims(nil)), reasonUnknownKey},
		{"not a JWT", vJWKS, "pt_abcdef", reasonMalformed},
		{"garbage header", vJWKS, "e30.e30.e30", reasonAlgorithm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(tc.v.refused.WithLabelValues(tc.reason))
			_, err := tc.v.Verify(context.Background(), tc.token)
			var e *Error
			if !errors.As(err, &e) || e.Reason != tc.reason {
				t.Fatalf("Verify = %v; want a refusal for %s", err, tc.reason)
			}
			if got := testutil.ToFloat64(tc.v.refused.WithLabelValues(tc.reason)); got != before+1 {
				t.Errorf("parley_jwt_refused_total{reason=%q} = %v, want %v", tc.reason, got, before+1)
			}
		})
	}
}

// TestUnknownKeyRefetch: a token whose kid the set lacks makes one
// refetch, and no second one within MinRefetch; after it, another.
func TestUnknownKeyRefetch(t *testing.T) {
	k1, k2 := mustKey(t, RS256, "k1"), mustKey(t, RS256, "k2")
	j := newJWKSServer(t, k1)
	v, clk := mustVerifier(t, Config{JWKSURL: j.URL, Tick: make(chan time.Time)})
	ctx := context.Background()
	if got := v.fetched("ok"); got != 1 {
		t.Fatalf("fetches after New = %v, want 1", got)
	}
	check := func(tok, wantReason string, wantFetches float64) {
		t.Helper()
		_, err := v.Verify(ctx, tok)
		var e *Error
		switch {
		case wantReason == "" && err != nil:
			t.Errorf("Verify = %v, want success", err)
		case wantReason != "" && (!errors.As(err, &e) || e.Reason != wantReason):
			t.Errorf("Verify = %v, want %s", err, wantReason)
		}
		if got := v.fetched("ok"); got != wantFetches {
			t.Errorf("fetches = %v, want %v", got, wantFetches)
		}
	}
	check(k2.sign(t, claims(nil)), reasonUnknownKey, 2) // one refetch
	check(k2.sign(t, claims(nil)), reasonUnknownKey, 2) // none within a minute
	check(k1.sign(t, claims(nil)), "", 2)               // a known key needs none
	j.serve(t, k1, k2)                                  // the provider adds k2
	check(k2.sign(t, claims(nil)), reasonUnknownKey, 2) // still within the minute
	clk.add(DefaultMinRefetch)
	check(k2.sign(t, claims(map[string]any{"exp": t0.Add(2 * time.Hour).Unix()})), "", 3) // a minute on: one refetch, k2 found
}

// TestRotation: the provider rotates its key; tokens of the new key work
// without a restart, by refetch (unknown kid) or by the periodic refresh.
func TestRotation(t *testing.T) {
	k1, k2, k3 := mustKey(t, ES256, "k1"), mustKey(t, ES256, "k2"), mustKey(t, EdDSA, "k3")
	j := newJWKSServer(t, k1)
	tick := make(chan time.Time)
	v, _ := mustVerifier(t, Config{JWKSURL: j.URL, Tick: tick})
	ctx := context.Background()
	if _, err := v.Verify(ctx, k1.sign(t, claims(nil))); err != nil {
		t.Fatalf("k1 before the rotation: %v", err)
	}
	j.serve(t, k2)
	if _, err := v.Verify(ctx, k2.sign(t, claims(nil))); err != nil {
		t.Errorf("k2 after the rotation: %v", err)
	}
	if _, err := v.Verify(ctx, k1.sign(t, claims(nil))); err == nil {
		t.Errorf("k1 after the rotation verified; want refused (no longer in the set)")
	}

	// The periodic refresh: the refetch limit is spent (the clock has
	// not moved), so only the tick can bring k3 in.
	j.serve(t, k3)
	before := v.fetched("ok")
	tick <- t0
	tick <- t0 // taken once the first tick's refresh is done; it starts another
	// Each tick refreshes once: two fetches once the second is done (the
	// count read right after the second send raced with its fetch).
	for deadline := time.Now().Add(10 * time.Second); v.fetched("ok") < before+2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // a poll of a counter, not a deadline
	}
	if got := v.fetched("ok"); got != before+2 {
		t.Errorf("fetches after two ticks = %v, want %v", got, before+2)
	}
	if _, err := v.Verify(ctx, k3.sign(t, claims(nil))); err != nil {
		t.Errorf("k3 after the refresh: %v", err)
	}
}

func TestJWKSDown(t *testing.T) {
	k1 := mustKey(t, RS256, "k1")
	for _, tc := range []struct {
		name  string
		setup func(j *jwksServer)
	}{
		{"503", func(j *jwksServer) { j.set(http.StatusServiceUnavailable, []byte("down")) }},
		{"garbage", func(j *jwksServer) { j.set(http.StatusOK, []byte("<html>not json</html>")) }},
		{"no keys", func(j *jwksServer) { j.set(http.StatusOK, []byte(`{"keys":[]}`)) }},
		{"only a symmetric key", func(j *jwksServer) {
			b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: testSecret, KeyID: "k1", Algorithm: HS256}}})
			j.set(http.StatusOK, b)
		}},
		{"closed", func(j *jwksServer) { j.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJWKSServer(t)
			tc.setup(j)
			v, _ := mustVerifier(t, Config{JWKSURL: j.URL, Tick: make(chan time.Time)})
			if got := v.fetched("error"); got != 1 {
				t.Errorf("failed fetches after New = %v, want 1", got)
			}
			_, err := v.Verify(context.Background(), k1.sign(t, claims(nil)))
			var e *Error
			if !errors.As(err, &e) || e.Reason != reasonJWKS {
				t.Errorf("Verify = %v, want %s", err, reasonJWKS)
			}
			if got := testutil.ToFloat64(v.refused.WithLabelValues(reasonJWKS)); got != 1 {
				t.Errorf("refused{jwks_unavailable} = %v, want 1", got)
			}
		})
	}
}

// TestJWKSHangs: a key set that never answers costs a token at most the
// fetch's timeout.
func TestJWKSHangs(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stop)
	v, _ := mustVerifier(t, Config{JWKSURL: srv.URL, HTTPTimeout: 50 * time.Millisecond, Tick: make(chan time.Time)})
	_, err := v.Verify(context.Background(), mustKey(t, RS256, "k1").sign(t, claims(nil)))
	var e *Error
	if !errors.As(err, &e) || e.Reason != reasonJWKS {
		t.Errorf("Verify = %v, want %s", err, reasonJWKS)
	}
}

// TestJWKSGarbageKeepsKeys: a fetch that fails keeps the last good set.
func TestJWKSGarbageKeepsKeys(t *testing.T) {
	k1, k2 := mustKey(t, RS256, "k1"), mustKey(t, RS256, "k2")
	j := newJWKSServer(t, k1)
	tick := make(chan time.Time)
	v, _ := mustVerifier(t, Config{JWKSURL: j.URL, Tick: tick})
	j.set(http.StatusOK, []byte("{garbage"))
	tick <- t0
	tick <- t0
	if got := v.fetched("error"); got != 1 {
		t.Fatalf("failed fetches = %v, want 1", got)
	}
	if _, err := v.Verify(context.Background(), k1.sign(t, claims(nil))); err != nil {
		t.Errorf("k1 after a garbage fetch: %v", err)
	}
	_, err := v.Verify(context.Background(), k2.sign(t, claims(nil)))
	var e *Error
	if !errors.As(err, &e) || e.Reason != reasonJWKS {
		t.Errorf("unknown k2 while the set fails = %v, want %s", err, reasonJWKS)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no issuer", Config{Audience: "a", HS256Secret: testSecret}},
		{"no audience", Config{Issuer: "i", HS256Secret: testSecret}},
		{"no key", Config{Issuer: "i", Audience: "a"}},
		{"short secret", Config{Issuer: "i", Audience: "a", HS256Secret: []byte("short")}},
		{"none", Config{Issuer: "i", Audience: "a", HS256Secret: testSecret, Algorithms: []string{"none"}}},
		{"RS256 without a JWKS", Config{Issuer: "i", Audience: "a", HS256Secret: testSecret, Algorithms: []string{RS256}}},
		{"HS256 without a secret", Config{Issuer: "i", Audience: "a", JWKSURL: "http://127.0.0.1:1/", Algorithms: []string{HS256}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := New(tc.cfg); err == nil {
				v.Close()
				t.Errorf("New(%+v) succeeded, want an error", tc.cfg)
			}
		})
	}
}

func TestLooksLikeJWT(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"eyJh.eyJz.c2ln", true},
		{"a-_.b.c", true},
		{"pt_AbCdEf0123456789", false},
		{"a.b", false},
		{"a.b.c.d", false},
		{"a..c", false},
		{"a.b.", false},
		{".b.c", false},
		{"a.b.c=", false},
		{"a b.c.d", false},
		{"", false},
	} {
		if got := LooksLikeJWT(tc.in); got != tc.want {
			t.Errorf("LooksLikeJWT(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	tok := "pt_" + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	if n := testing.AllocsPerRun(100, func() { LooksLikeJWT(tok) }); n != 0 {
		t.Errorf("LooksLikeJWT allocates %v times, want 0", n)
	}
}

// TestKeyKindPinned: a JWKS key that names no algorithm serves only the
// algorithm of its kind: an RSA key never checks an ES256 token.
func TestKeyKindPinned(t *testing.T) {
	rs := mustKey(t, RS256, "k")
	pub := rs.public()
	pub.Algorithm = ""
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{pub}})
	if err != nil {
		t.Fatal(err)
	}
	j := newJWKSServer(t)
	j.set(http.StatusOK, b)
	v, _ := mustVerifier(t, Config{JWKSURL: j.URL, Tick: make(chan time.Time)})
	if _, err := v.Verify(context.Background(), rs.sign(t, claims(nil))); err != nil {
		t.Errorf("RS256 with the alg-less RSA key: %v", err)
	}
	_, err = v.Verify(context.Background(), signer{ES256, "k", mustKey(t, ES256, "").key}.sign(t, claims(nil)))
	var e *Error
	if !errors.As(err, &e) || e.Reason != reasonUnknownKey {
		t.Errorf("ES256 under the RSA key's id = %v, want %s", err, reasonUnknownKey)
	}
}
