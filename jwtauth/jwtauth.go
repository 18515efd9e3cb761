package jwtauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus"
)

// The algorithms a Verifier can accept: HS256 with Config.HS256Secret,
// the others with keys from Config.JWKSURL. "none" is never one.
const (
	HS256 = "HS256"
	RS256 = "RS256"
	ES256 = "ES256"
	EdDSA = "EdDSA"
)

// Defaults of Config's zero fields.
const (
	DefaultLeeway       = 30 * time.Second
	DefaultRefreshEvery = 15 * time.Minute
	DefaultMinRefetch   = time.Minute
	DefaultHTTPTimeout  = 5 * time.Second
	// MinSecret is the shortest HS256 secret accepted, in bytes (RFC
	// 7518 §3.2: a key at least as long as the hash).
	MinSecret = 32
	// maxJWKS bounds the size of a key set document.
	maxJWKS = 1 << 20
)

// DefaultNameClaims are the claims a display name is taken from, the
// first one present, when Config.NameClaim is empty.
var DefaultNameClaims = []string{"preferred_username", "name"}

// Config configures a Verifier. Zero fields take the documented defaults.
type Config struct {
	// HS256Secret, when set, verifies HS256 tokens (at least MinSecret
	// bytes).
	HS256Secret []byte
	// JWKSURL, when set, is the provider's key set (RFC 7517), for
	// RS256, ES256 and EdDSA tokens.
	JWKSURL string
	// Issuer is the iss every token must carry (required).
	Issuer string
	// Audience must be one of every token's aud (required).
	Audience string
	// Algorithms pins the accepted alg values, among HS256, RS256, ES256
	// and EdDSA. Default: HS256 when HS256Secret is set, and RS256,
	// ES256 and EdDSA when JWKSURL is set. HS256 needs HS256Secret and
	// the others JWKSURL: a token is only ever checked with a key of its
	// own algorithm's kind (no HS/RS confusion).
	Algorithms []string
	// NameClaim is the claim the display name comes from. Default: the
	// first present of DefaultNameClaims.
	NameClaim string
	// Leeway is the clock skew allowed on exp, nbf and iat. Default
	// DefaultLeeway.
	Leeway time.Duration
	// RefreshEvery is how often the key set is fetched again. Default
	// DefaultRefreshEvery.
	RefreshEvery time.Duration
	// Tick, when set, replaces the RefreshEvery ticker: each value on it
	// fetches the key set (tests drive the refresh with it).
	Tick <-chan time.Time
	// MinRefetch is the least time between two fetches of the key set
	// caused by a token whose key id it does not hold. Default
	// DefaultMinRefetch.
	MinRefetch time.Duration
	// HTTPTimeout bounds one fetch of the key set. Default
	// DefaultHTTPTimeout.
	HTTPTimeout time.Duration
	// HTTPClient fetches the key set. Default: a client of its own.
	HTTPClient *http.Client
	// Now is the clock of exp, nbf and the refetch limit. Default
	// time.Now.
	Now func() time.Time
	// Registerer, when set, registers the metrics.
	Registerer prometheus.Registerer
	// Logger logs the key set's fetches that fail. Default
	// slog.Default().
	Logger *slog.Logger
}

// Identity is who a verified token names.
type Identity struct {
	Issuer  string
	Subject string
	// Name is the name claim's value; empty when the token has none.
	Name string
	// ExpiresAt is the token's exp.
	ExpiresAt time.Time
	// SignedInAt is when the user signed in: the token's auth_time
	// (OpenID Connect), else its iat; zero when it has neither.
	SignedInAt time.Time
}

// Error is a refused token: Reason is the label of the refusal metric
// (malformed, algorithm, signature, unknown_key, jwks_unavailable,
// expired, not_yet_valid, issuer, audience, claims).
type Error struct {
	Reason string
	Msg    string
}

func (e *Error) Error() string { return "jwt: " + e.Msg }

// The refusal reasons.
const (
	reasonMalformed   = "malformed"
	reasonAlgorithm   = "algorithm"
	reasonSignature   = "signature"
	reasonUnknownKey  = "unknown_key"
	reasonJWKS        = "jwks_unavailable"
	reasonExpired     = "expired"
	reasonNotYetValid = "not_yet_valid"
	reasonIssuer      = "issuer"
	reasonAudience    = "audience"
	reasonClaims      = "claims"
)

var reasons = []string{reasonMalformed, reasonAlgorithm, reasonSignature, reasonUnknownKey, reasonJWKS,
	reasonExpired, reasonNotYetValid, reasonIssuer, reasonAudience, reasonClaims}

// Verifier verifies tokens. It is safe for concurrent use; Close stops
// its key set's refresh.
type Verifier struct {
	cfg     Config
	algs    []jose.SignatureAlgorithm
	allowed map[string]bool
	jwks    *keySet // nil without Config.JWKSURL

	refused *prometheus.CounterVec // by reason
}

// New returns a Verifier. With a JWKS URL it fetches the key set once
// before it returns (a failure is logged and counted, not returned: the
// tokens that need a key are refused until a fetch succeeds) and starts
// its refresh. It fails for a configuration that cannot verify anything
// safely.
func New(cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("jwt: an issuer and an audience are required")
	}
	if cfg.HS256Secret == nil && cfg.JWKSURL == "" {
		return nil, errors.New("jwt: an HS256 secret or a JWKS URL is required")
	}
	if cfg.HS256Secret != nil && len(cfg.HS256Secret) < MinSecret {
		return nil, fmt.Errorf("jwt: the HS256 secret must be at least %d bytes", MinSecret)
	}
	if len(cfg.Algorithms) == 0 {
		if cfg.HS256Secret != nil {
			cfg.Algorithms = append(cfg.Algorithms, HS256)
		}
		if cfg.JWKSURL != "" {
			cfg.Algorithms = append(cfg.Algorithms, RS256, ES256, EdDSA)
		}
	}
	v := &Verifier{cfg: cfg, allowed: map[string]bool{}}
	for _, a := range cfg.Algorithms {
		switch {
		case a == HS256 && cfg.HS256Secret == nil:
			return nil, errors.New("jwt: HS256 needs an HS256 secret")
		case a == HS256:
		case (a == RS256 || a == ES256 || a == EdDSA) && cfg.JWKSURL == "":
			return nil, fmt.Errorf("jwt: %s needs a JWKS URL", a)
		case a == RS256 || a == ES256 || a == EdDSA:
		default:
			return nil, fmt.Errorf("jwt: algorithm %q is not supported (HS256, RS256, ES256, EdDSA)", a)
		}
		if !v.allowed[a] {
			v.allowed[a] = true
			v.algs = append(v.algs, jose.SignatureAlgorithm(a))
		}
	}
	if v.cfg.Leeway <= 0 {
		v.cfg.Leeway = DefaultLeeway
	}
	if v.cfg.Now == nil {
		v.cfg.Now = time.Now
	}
	if v.cfg.Logger == nil {
		v.cfg.Logger = slog.Default()
	}
	v.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_jwt_refused_total",
		Help: "JWTs refused, by reason (malformed, algorithm, signature, unknown_key, jwks_unavailable, expired, not_yet_valid, issuer, audience, claims).",
	}, []string{"reason"})
	for _, r := range reasons {
		v.refused.WithLabelValues(r)
	}
	if cfg.JWKSURL != "" {
		v.jwks = newKeySet(&v.cfg)
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(v.refused)
		if v.jwks != nil {
			cfg.Registerer.MustRegister(v.jwks.fetches)
		}
	}
	if v.jwks != nil {
		v.jwks.start()
	}
	return v, nil
}

// Close stops the key set's refresh and waits for it.
func (v *Verifier) Close() error {
	if v.jwks != nil {
		v.jwks.close()
	}
	return nil
}

// LooksLikeJWT reports whether token has the shape of a JWS in compact
// form: three non-empty dot-separated parts of base64url characters. It
// allocates nothing and decodes nothing, so that a caller can keep its
// own tokens' path free of JWT parsing.
func LooksLikeJWT(token string) bool {
	parts, n := 0, 0
	for i := 0; i < len(token); i++ {
		c := token[i]
		switch {
		case c == '.':
			if n == 0 {
				return false
			}
			parts, n = parts+1, 0
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			n++
		default:
			return false
		}
	}
	return parts == 2 && n > 0
}

// Verify checks token and returns the identity it names, or fails with
// an *Error.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	id, err := v.verify(ctx, token)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			v.refused.WithLabelValues(e.Reason).Inc()
		}
		return Identity{}, err
	}
	return id, nil
}

func (v *Verifier) verify(ctx context.Context, token string) (Identity, error) {
	if !LooksLikeJWT(token) {
		return Identity{}, &Error{reasonMalformed, "not a JWT in compact form"}
	}
	alg := headerAlg(token)
	if !v.allowed[alg] {
		return Identity{}, &Error{reasonAlgorithm, fmt.Sprintf("algorithm %q is not allowed (allowed: %s)", alg, strings.Join(v.cfg.Algorithms, ", "))}
	}
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return Identity{}, &Error{reasonMalformed, fmt.Sprintf("malformed token: %v", err)}
	}
	var claims jwt.Claims
	extra := map[string]any{}
	if alg == HS256 {
		err = tok.Claims(v.cfg.HS256Secret, &claims, &extra)
	} else {
		err = v.jwks.verify(ctx, tok, alg, tok.Headers[0].KeyID, &claims, &extra)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return Identity{}, err
		}
		return Identity{}, &Error{reasonSignature, "the signature does not verify"}
	}
	return v.check(claims, extra)
}

// check checks the verified claims and makes the identity.
func (v *Verifier) check(c jwt.Claims, extra map[string]any) (Identity, error) {
	switch {
	case c.Expiry == nil:
		return Identity{}, &Error{reasonClaims, "the token has no exp"}
	case c.Subject == "":
		return Identity{}, &Error{reasonClaims, "the token has no sub"}
	}
	err := c.ValidateWithLeeway(jwt.Expected{
		Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: v.cfg.Now(),
	}, v.cfg.Leeway)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return Identity{}, &Error{reasonExpired, "the token has expired"}
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return Identity{}, &Error{reasonNotYetValid, "the token is not valid yet"}
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return Identity{}, &Error{reasonIssuer, fmt.Sprintf("the issuer %q is not %q", c.Issuer, v.cfg.Issuer)}
	case errors.Is(err, jwt.ErrInvalidAudience):
		return Identity{}, &Error{reasonAudience, fmt.Sprintf("the audience does not include %q", v.cfg.Audience)}
	default:
		return Identity{}, &Error{reasonClaims, fmt.Sprintf("claims: %v", err)}
	}
	id := Identity{Issuer: c.Issuer, Subject: c.Subject, ExpiresAt: c.Expiry.Time().UTC()}
	if c.IssuedAt != nil {
		id.SignedInAt = c.IssuedAt.Time().UTC()
	}
	if at, ok := extra["auth_time"].(float64); ok && at > 0 {
		id.SignedInAt = time.Unix(int64(at), 0).UTC()
	}
	names := DefaultNameClaims
	if v.cfg.NameClaim != "" {
		names = []string{v.cfg.NameClaim}
	}
	for _, n := range names {
		if s, ok := extra[n].(string); ok && s != "" {
			id.Name = s
			break
		}
	}
	return id, nil
}

// headerAlg returns the alg of a token's protected header, "" when it
// cannot be read (the parse that follows says why).
func headerAlg(token string) string {
	h, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return ""
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(b, &hdr) != nil {
		return ""
	}
	return hdr.Alg
}
