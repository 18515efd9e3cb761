package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Provider is a running test provider. Set its knobs before a sign-in
// starts (they are read under a lock, so a test may change them between
// sign-ins).
type Provider struct {
	// URL is the issuer (the server's base URL).
	URL                    string
	ClientID, ClientSecret string

	srv *httptest.Server
	key *rsa.PrivateKey

	mu sync.Mutex // guards the following fields
	// subject and name are the user signed in (sub, preferred_username).
	subject, name string
	// Knobs: an error= answer instead of a code; ID tokens with another
	// aud, iss or nonce than they should carry.
	deny                string
	aud, iss, nonce     string
	codes               map[string]grant // unused codes
	exchanges, idTokens int
}

type grant struct {
	challenge, nonce, redirect string
}

// New starts a provider for client id "parley" with a secret, signing in
// subject "alice-sub" named "alice". Close stops it.
func New() *Provider {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p := &Provider{ClientID: "parley", ClientSecret: "test-secret", key: key,
		subject: "alice-sub", name: "alice", codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(mux)
	p.URL = p.srv.URL
	return p
}

// Close stops the provider: after it, it cannot be reached.
func (p *Provider) Close() { p.srv.Close() }

// SetUser sets the subject and name of the next sign-ins.
func (p *Provider) SetUser(subject, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.subject, p.name = subject, name
}

// Deny makes the authorization endpoint answer with error=code (""
// signs in again).
func (p *Provider) Deny(code string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny = code
}

// Forge makes the next ID tokens carry this aud, iss or nonce instead of
// the right ones ("" for the right one).
func (p *Provider) Forge(aud, iss, nonce string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.aud, p.iss, p.nonce = aud, iss, nonce
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
		"jwks_uri": p.URL + "/jwks", "response_types_supported": []string{"code"},
		"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported": []string{"S256"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig",
	}}})
}

// authorize signs the fixed user in at once and redirects back with a
// code (or the Deny error).
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	back := url.Values{"state": {q.Get("state")}}
	p.mu.Lock()
	switch {
	case p.deny != "":
		back.Set("error", p.deny)
		back.Set("error_description", "The resource owner denied the request")
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		back.Set("error", "invalid_request")
		back.Set("error_description", "PKCE S256 is required")
	default:
		code := rand.Text()
		p.codes[code] = grant{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirect: redirect.String()}
		back.Set("code", code)
	}
	p.mu.Unlock()
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// token exchanges a code, once, for an ID token.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(p.ClientSecret)) != 1 {
		oauthError(w, "invalid_client")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exchanges++
	code := r.PostForm.Get("code")
	g, ok := p.codes[code]
	delete(p.codes, code) // once, even when the rest is wrong
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("redirect_uri") != g.redirect ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		oauthError(w, "invalid_grant")
		return
	}
	claims := map[string]any{
		"iss": or(p.iss, p.URL), "sub": p.subject, "aud": or(p.aud, p.ClientID),
		"iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix(),
		"nonce": or(p.nonce, g.nonce), "preferred_username": p.name,
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		panic(err)
	}
	idToken, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		panic(err)
	}
	p.idTokens++
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 300, "id_token": idToken,
	})
}

// Counts returns how many code exchanges were tried and how many ID
// tokens given.
func (p *Provider) Counts() (exchanges, idTokens int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanges, p.idTokens
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func oauthError(w http.ResponseWriter, code string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
