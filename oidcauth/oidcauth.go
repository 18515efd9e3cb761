package oidcauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Defaults of Config's zero fields.
const (
	DefaultStateTTL    = 10 * time.Minute
	DefaultHTTPTimeout = 10 * time.Second
	// MinStateKey is the shortest Config.StateKey accepted, in bytes.
	MinStateKey = 16
	// DiscoveryRetry is how long a failed discovery stands: the sign-ins
	// meanwhile fail at once, so that a provider that is down costs one
	// fetch (and one timeout's wait) per this much time, not one per
	// sign-in.
	DiscoveryRetry = 5 * time.Second
	// maxState bounds a signed state's length (a cookie's value).
	maxState = 1024
)

// DefaultScopes are the scopes asked for when Config.Scopes is empty.
var DefaultScopes = []string{oidc.ScopeOpenID, "profile"}

// DefaultNameClaims are the claims a display name is taken from, the
// first one present, when Config.NameClaim is empty (as jwtauth's).
var DefaultNameClaims = []string{"preferred_username", "name"}

// Config configures an RP. Zero fields take the documented defaults.
type Config struct {
	// Issuer is the provider's issuer URL; its discovery document is at
	// Issuer + "/.well-known/openid-configuration" and must name the
	// same issuer (required).
	Issuer string
	// ClientID is Parley's client id at the provider, the aud of every
	// ID token (required).
	ClientID string
	// ClientSecret is the client's secret; empty for a public client
	// (PKCE is used either way).
	ClientSecret string
	// RedirectURL is the public URL of the callback, registered at the
	// provider (required).
	RedirectURL string
	// Scopes asked for. Default DefaultScopes.
	Scopes []string
	// NameClaim is the ID token claim a new user's name comes from.
	// Default: the first present of DefaultNameClaims.
	NameClaim string
	// StateKey signs the states (at least MinStateKey bytes, required).
	// Nodes that share it finish each other's sign-ins.
	StateKey []byte
	// StateTTL is how long a sign-in may take, start to callback.
	// Default DefaultStateTTL.
	StateTTL time.Duration
	// HTTPClient talks to the provider. Default: a client with a
	// DefaultHTTPTimeout timeout.
	HTTPClient *http.Client
	// Now is the clock of the states' expiry. Default time.Now.
	Now func() time.Time
}

// Identity is the user an ID token names.
type Identity struct {
	Issuer  string // the token's iss: Config.Issuer
	Subject string // its sub
	Name    string // the name claim's value; "" when absent
}

// Reasons of an *Error, one per kind of failed sign-in (metric labels).
const (
	ReasonDenied   = "denied"        // the provider answered with an error (access_denied, …)
	ReasonNoState  = "no_state"      // no sign-in in progress in this browser (no or cleared state)
	ReasonBadState = "bad_state"     // state forged, altered, or not the callback's
	ReasonExpired  = "expired"       // the sign-in took longer than Config.StateTTL
	ReasonProvider = "provider"      // the provider is unreachable or refused the code
	ReasonToken    = "invalid_token" // the ID token failed a check (signature, iss, aud, exp, nonce)
)

// Reasons lists every Reason, for metrics.
var Reasons = []string{ReasonDenied, ReasonNoState, ReasonBadState, ReasonExpired, ReasonProvider, ReasonToken}

// Error is a failed sign-in: Reason says which kind, Message what to
// tell the user (nothing secret in it).
type Error struct {
	Reason  string
	Message string
	Err     error // the underlying error, for the log; may be nil
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("oidc %s: %s: %v", e.Reason, e.Message, e.Err)
	}
	return fmt.Sprintf("oidc %s: %s", e.Reason, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

func fail(reason, msg string, err error) *Error {
	return &Error{Reason: reason, Message: msg, Err: err}
}

// RP is the relying party of one provider. Its methods are safe for
// concurrent use.
type RP struct {
	cfg    Config
	client *http.Client

	mu       sync.Mutex     // guards the following fields; held over a discovery
	provider *oidc.Provider // nil until a discovery succeeds
	failed   error          // the last discovery's failure, while provider is nil
	failedAt time.Time      // when it failed
}

// New returns an RP. It does not contact the provider: the first
// sign-in does (discovery), and a failed discovery is tried again by the
// first sign-in DiscoveryRetry after it, so that Parley starts while its
// provider is down.
func New(cfg Config) (*RP, error) {
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("an issuer URL is required")
	case cfg.ClientID == "":
		return nil, errors.New("a client id is required")
	case cfg.RedirectURL == "":
		return nil, errors.New("a redirect URL is required")
	case len(cfg.StateKey) < MinStateKey:
		return nil, fmt.Errorf("the state key must be at least %d bytes", MinStateKey)
	}
	if u, err := url.Parse(cfg.RedirectURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("redirect URL %q: want an absolute http(s) URL", cfg.RedirectURL)
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = DefaultScopes
	}
	if cfg.StateTTL <= 0 {
		cfg.StateTTL = DefaultStateTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	return &RP{cfg: cfg, client: client}, nil
}

// StateTTL is how long a sign-in may take: the life of its state.
func (rp *RP) StateTTL() time.Duration { return rp.cfg.StateTTL }

// discover returns the provider, fetching its discovery document on
// first use (and again after a failure).
func (rp *RP) discover(ctx context.Context) (*oidc.Provider, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.provider != nil {
		return rp.provider, nil
	}
	if rp.failed != nil && rp.cfg.Now().Sub(rp.failedAt) < DiscoveryRetry {
		return nil, rp.failed
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultHTTPTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, rp.client), rp.cfg.Issuer)
	if err != nil {
		rp.failed, rp.failedAt = fail(ReasonProvider, "the identity provider cannot be reached", fmt.Errorf("discovery: %w", err)), rp.cfg.Now()
		return nil, rp.failed
	}
	rp.provider, rp.failed = p, nil
	return p, nil
}

func (rp *RP) oauth2(p *oidc.Provider) *oauth2.Config {
	ep := p.Endpoint()
	ep.AuthStyle = rp.authStyle(p)
	return &oauth2.Config{
		ClientID: rp.cfg.ClientID, ClientSecret: rp.cfg.ClientSecret, RedirectURL: rp.cfg.RedirectURL,
		Endpoint: ep, Scopes: rp.cfg.Scopes,
	}
}

// authStyle is how the client authenticates at the token endpoint, set
// once rather than guessed by x/oauth2 (whose guess retries a refused
// exchange the other way, hiding the first refusal): a public client
// sends its id in the form; a confidential one uses HTTP Basic
// (client_secret_basic, the default of OpenID Connect Discovery) unless
// the provider lists only client_secret_post.
func (rp *RP) authStyle(p *oidc.Provider) oauth2.AuthStyle {
	if rp.cfg.ClientSecret == "" {
		return oauth2.AuthStyleInParams
	}
	var d struct {
		Methods []string `json:"token_endpoint_auth_methods_supported"`
	}
	if p.Claims(&d) == nil && len(d.Methods) > 0 && !slices.Contains(d.Methods, "client_secret_basic") && slices.Contains(d.Methods, "client_secret_post") {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

// state is what a sign-in keeps in the browser between Begin and Finish.
type state struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"` // PKCE code verifier
	Expires  int64  `json:"e"` // Unix seconds
}

// Begin starts a sign-in: it returns the provider's authorization URL to
// send the browser to, and the signed state for the browser to keep
// until the callback (Finish). It fails with an *Error of
// ReasonProvider when the provider cannot be discovered.
func (rp *RP) Begin(ctx context.Context) (authURL, signed string, err error) {
	p, err := rp.discover(ctx)
	if err != nil {
		return "", "", err
	}
	st := state{
		State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(),
		Expires: rp.cfg.Now().Add(rp.cfg.StateTTL).Unix(),
	}
	authURL = rp.oauth2(p).AuthCodeURL(st.State, oauth2.S256ChallengeOption(st.Verifier), oidc.Nonce(st.Nonce))
	return authURL, rp.sign(st), nil
}

// Finish ends a sign-in at the callback: query is the callback's query
// (code and state, or error), signed the state Begin returned (""
// when the browser kept none). It checks the state, exchanges the code
// with the PKCE verifier, and verifies the ID token (signature by the
// provider's keys, iss, aud, exp, nonce). Every failure is an *Error.
func (rp *RP) Finish(ctx context.Context, query url.Values, signed string) (Identity, error) {
	if signed == "" {
		return Identity{}, fail(ReasonNoState, "no sign-in is in progress in this browser (it was finished already, or cookies are off): start again", nil)
	}
	st, err := rp.open(signed)
	if err != nil {
		return Identity{}, fail(ReasonBadState, "the sign-in state is not valid: start again", err)
	}
	if got := query.Get("state"); subtle.ConstantTimeCompare([]byte(got), []byte(st.State)) != 1 {
		return Identity{}, fail(ReasonBadState, "the callback's state is not this browser's sign-in: start again", nil)
	}
	if rp.cfg.Now().Unix() > st.Expires {
		return Identity{}, fail(ReasonExpired, fmt.Sprintf("the sign-in took longer than %v: start again", rp.cfg.StateTTL), nil)
	}
	// An error answer names the sign-in's state as a code does (RFC 6749
	// §4.1.2.1): it is the provider's only once the state is this
	// browser's, so a forged error link cannot cancel a sign-in.
	if e := query.Get("error"); e != "" {
		msg := "the identity provider refused the sign-in (" + printable(e) + ")"
		if d := query.Get("error_description"); d != "" {
			msg += ": " + printable(d)
		}
		return Identity{}, fail(ReasonDenied, msg, nil)
	}
	code := query.Get("code")
	if code == "" {
		return Identity{}, fail(ReasonDenied, "the identity provider sent no code", nil)
	}
	p, err := rp.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	ctx = oidc.ClientContext(ctx, rp.client)
	tok, err := rp.oauth2(p).Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return Identity{}, fail(ReasonProvider, "the identity provider did not accept the sign-in's code", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Identity{}, fail(ReasonToken, "the identity provider sent no ID token", nil)
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: rp.cfg.ClientID, Now: rp.cfg.Now}).Verify(ctx, raw)
	if err != nil {
		return Identity{}, fail(ReasonToken, "the identity provider's ID token is not valid", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(st.Nonce)) != 1 {
		return Identity{}, fail(ReasonToken, "the ID token is not this sign-in's (nonce)", nil)
	}
	if idt.Subject == "" {
		return Identity{}, fail(ReasonToken, "the ID token names no subject", nil)
	}
	return Identity{Issuer: idt.Issuer, Subject: idt.Subject, Name: rp.name(idt)}, nil
}

// name returns the display name claim of an ID token, "" when absent.
func (rp *RP) name(idt *oidc.IDToken) string {
	var claims map[string]any
	if idt.Claims(&claims) != nil {
		return ""
	}
	names := DefaultNameClaims
	if rp.cfg.NameClaim != "" {
		names = []string{rp.cfg.NameClaim}
	}
	for _, c := range names {
		if s, ok := claims[c].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// sign encodes st as base64url(JSON) "." base64url(HMAC-SHA256).
func (rp *RP) sign(st state) string {
	b, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(rp.mac(payload))
}

func (rp *RP) mac(payload string) []byte {
	m := hmac.New(sha256.New, rp.cfg.StateKey)
	m.Write([]byte("parley oidc state v1\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// open checks a signed state's MAC and decodes it.
func (rp *RP) open(signed string) (state, error) {
	var st state
	if len(signed) > maxState {
		return st, errors.New("too long")
	}
	payload, sig, ok := strings.Cut(signed, ".")
	if !ok {
		return st, errors.New("malformed")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, rp.mac(payload)) {
		return st, errors.New("bad signature")
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return st, fmt.Errorf("payload: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil || st.State == "" || st.Nonce == "" || st.Verifier == "" {
		return st, fmt.Errorf("payload: %v", err)
	}
	return st, nil
}

// printable cuts a provider's error text to 200 bytes of printable ASCII,
// so that it can be shown and logged as it is.
func printable(s string) string {
	b := []byte(s)
	n := 0
	for _, c := range b {
		if n == 200 {
			break
		}
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		b[n] = c
		n++
	}
	return string(b[:n])
}
