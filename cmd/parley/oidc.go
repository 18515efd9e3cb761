package main

import (
	"crypto/rand"
	"crypto/sha256"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"parley/chat"
	"parley/oidcauth"
	"parley/rest"
)

// oidcConfig is OpenID Connect sign-in's configuration (--oidc-*): off
// unless --oidc-issuer is set.
type oidcConfig struct {
	Issuer           string
	ClientID         string
	ClientSecret     string
	ClientSecretFile string
	RedirectURL      string // public URL of /api/auth/oidc/callback
	Name             string // the provider's name on the sign-in button
	Scopes           string // comma-separated; "" for openid,profile
	NameClaim        string
	StateKey         string // signs the states; "" for one derived from the secret
	StateTTL         time.Duration
}

func (c *oidcConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Issuer, "oidc-issuer", "", "OpenID Connect sign-in: the provider's issuer URL (its discovery document is at ISSUER/.well-known/openid-configuration); empty: off")
	fs.StringVar(&c.ClientID, "oidc-client-id", "", "OpenID Connect sign-in: Parley's client id at the provider (required with --oidc-issuer)")
	fs.StringVar(&c.ClientSecret, "oidc-client-secret", "", "OpenID Connect sign-in: the client's secret (better: PARLEY_OIDC_CLIENT_SECRET or --oidc-client-secret-file); empty for a public client (PKCE either way)")
	fs.StringVar(&c.ClientSecretFile, "oidc-client-secret-file", "", "OpenID Connect sign-in: a file holding the client's secret (a final newline is not part of it)")
	fs.StringVar(&c.RedirectURL, "oidc-redirect-url", "", "OpenID Connect sign-in: the public URL of /api/auth/oidc/callback, as registered at the provider (required with --oidc-issuer)")
	fs.StringVar(&c.Name, "oidc-name", "", "OpenID Connect sign-in: the provider's name on the web client's button, \"Sign in with NAME\" (empty: the issuer's host)")
	fs.StringVar(&c.Scopes, "oidc-scopes", "", "OpenID Connect sign-in: comma-separated scopes asked for (empty: openid,profile)")
	fs.StringVar(&c.NameClaim, "oidc-name-claim", "", "OpenID Connect sign-in: the ID token claim a new user's name comes from (empty: preferred_username, else name, else one derived from the identity)")
	fs.StringVar(&c.StateKey, "oidc-state-key", "", "OpenID Connect sign-in: secret (16 characters or more) that signs the sign-in state cookie; give every node the same one (empty: derived from the client secret, else random per process, which cluster mode refuses)")
	fs.DurationVar(&c.StateTTL, "oidc-state-ttl", oidcauth.DefaultStateTTL, "OpenID Connect sign-in: the longest a sign-in may take, from the button to the provider's redirect back")
}

// openOIDC returns OpenID Connect sign-in of --oidc-* over svc, nil when
// --oidc-issuer is unset.
func (m *Main) openOIDC(svc *chat.Service, clustered bool) (*rest.OIDC, error) {
	c := m.Config.OIDC
	if c.Issuer == "" {
		if c.ClientID != "" || c.RedirectURL != "" {
			return nil, fmt.Errorf("--oidc-client-id and --oidc-redirect-url need --oidc-issuer")
		}
		return nil, nil
	}
	// The state cookie is scoped to the callback's path, and the web
	// client calls the API at /api/: the public URL must keep that path.
	if u, err := url.Parse(c.RedirectURL); c.RedirectURL != "" && (err != nil || u.Path != "/api/auth/oidc/callback") {
		return nil, fmt.Errorf("--oidc-redirect-url %q: want the public URL of /api/auth/oidc/callback, such as https://chat.example/api/auth/oidc/callback", c.RedirectURL)
	}
	secret := c.ClientSecret
	if c.ClientSecretFile != "" {
		if secret != "" {
			return nil, fmt.Errorf("--oidc-client-secret and --oidc-client-secret-file: give one")
		}
		b, err := os.ReadFile(c.ClientSecretFile)
		if err != nil {
			return nil, fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		secret = strings.TrimRight(string(b), "\r\n")
	}
	var key []byte
	switch {
	case c.StateKey != "":
		if len(c.StateKey) < oidcauth.MinStateKey {
			return nil, fmt.Errorf("--oidc-state-key: want at least %d characters", oidcauth.MinStateKey)
		}
		key = []byte(c.StateKey)
	case secret != "":
		// Every node of a cluster has the client's secret: a key derived
		// from it is shared, and known to nobody else.
		h := sha256.Sum256([]byte("parley oidc state key\x00" + secret))
		key = h[:]
	case clustered:
		return nil, fmt.Errorf("--oidc-state-key is required in cluster mode for a public client (no secret), so that any node can finish a sign-in")
	default:
		key = make([]byte, 32)
		rand.Read(key)
	}
	var scopes []string
	for _, s := range strings.Split(c.Scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	rp, err := oidcauth.New(oidcauth.Config{
		Issuer: c.Issuer, ClientID: c.ClientID, ClientSecret: secret, RedirectURL: c.RedirectURL,
		Scopes: scopes, NameClaim: c.NameClaim, StateKey: key, StateTTL: c.StateTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("OpenID Connect sign-in (--oidc-*): %w", err)
	}
	name := c.Name
	if name == "" {
		if u, err := url.Parse(c.Issuer); err == nil && u.Host != "" {
			name = u.Host
		} else {
			name = c.Issuer
		}
	}
	return &rest.OIDC{Provider: rp, Login: svc, Name: name, Secure: strings.HasPrefix(c.RedirectURL, "https:")}, nil
}

// notFlag is a boolean flag that sets the opposite of its value: a
// default-true flag (--password-login) over a field whose zero value is
// the default (Config{} keeps passwords on).
type notFlag struct{ off *bool }

func (f notFlag) String() string {
	if f.off == nil {
		return "true"
	}
	return strconv.FormatBool(!*f.off)
}

func (f notFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*f.off = !v
	return nil
}

func (f notFlag) IsBoolFlag() bool { return true }
