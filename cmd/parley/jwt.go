package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"parley/chat"
	"parley/jwtauth"
)

// jwtConfig is JWT sign-in's configuration (--jwt-*): off unless an HS256
// secret file or a JWKS URL is given.
type jwtConfig struct {
	SecretFile  string        // file holding the HS256 shared secret
	JWKSURL     string        // the provider's key set, for RS256, ES256, EdDSA
	Issuer      string        // the iss every token must carry
	Audience    string        // must be one of every token's aud
	Algorithms  string        // comma-separated; "" for those the keys allow
	NameClaim   string        // claim of the display name; "" for preferred_username, then name
	Leeway      time.Duration // clock skew allowed on exp, nbf, iat
	JWKSRefresh time.Duration // time between fetches of the key set
}

func (c *jwtConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.SecretFile, "jwt-hs256-secret-file", "", "JWT sign-in: file holding the HS256 shared secret (32 bytes or more; a final newline is not part of it)")
	fs.StringVar(&c.JWKSURL, "jwt-jwks-url", "", "JWT sign-in: URL of the identity provider's JWKS, for RS256, ES256 and EdDSA tokens (fetched at start, every --jwt-jwks-refresh, and at most once a minute for an unknown key id)")
	fs.StringVar(&c.Issuer, "jwt-issuer", "", "JWT sign-in: the iss every token must carry (required with a secret or a JWKS)")
	fs.StringVar(&c.Audience, "jwt-audience", "", "JWT sign-in: a value every token's aud must hold (required with a secret or a JWKS)")
	fs.StringVar(&c.Algorithms, "jwt-algorithms", "", "JWT sign-in: comma-separated algorithms accepted, of HS256, RS256, ES256, EdDSA (empty: HS256 with a secret, the other three with a JWKS)")
	fs.StringVar(&c.NameClaim, "jwt-name-claim", "", "JWT sign-in: the claim a new user's name comes from (empty: preferred_username, else name, else one derived from the identity)")
	fs.DurationVar(&c.Leeway, "jwt-leeway", jwtauth.DefaultLeeway, "JWT sign-in: clock skew allowed on a token's exp, nbf and iat, and on the sign-in time of an account deletion (--delete-signin-window)")
	fs.DurationVar(&c.JWKSRefresh, "jwt-jwks-refresh", jwtauth.DefaultRefreshEvery, "JWT sign-in: time between fetches of the JWKS")
}

// on reports whether JWT sign-in is configured.
func (c *jwtConfig) on() bool { return c.SecretFile != "" || c.JWKSURL != "" }

// openJWT starts the JWT verifier of --jwt-*, kept in m.jwt for Close. It
// returns nil (no JWT sign-in) when neither a secret nor a JWKS is set.
func (m *Main) openJWT() (chat.JWTVerifier, error) {
	c := m.Config.JWT
	if !c.on() {
		if c.Issuer != "" || c.Audience != "" || c.Algorithms != "" {
			return nil, fmt.Errorf("--jwt-issuer, --jwt-audience and --jwt-algorithms need --jwt-hs256-secret-file or --jwt-jwks-url")
		}
		return nil, nil
	}
	cfg := jwtauth.Config{
		JWKSURL: c.JWKSURL, Issuer: c.Issuer, Audience: c.Audience, NameClaim: c.NameClaim,
		Leeway: c.Leeway, RefreshEvery: c.JWKSRefresh, Registerer: m.registry,
	}
	if c.SecretFile != "" {
		b, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("--jwt-hs256-secret-file: %w", err)
		}
		cfg.HS256Secret = []byte(strings.TrimRight(string(b), "\r\n"))
	}
	if c.Algorithms != "" {
		for _, a := range strings.Split(c.Algorithms, ",") {
			cfg.Algorithms = append(cfg.Algorithms, strings.TrimSpace(a))
		}
	}
	v, err := jwtauth.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("JWT sign-in (--jwt-*): %w", err)
	}
	m.jwt = v
	return v, nil
}
