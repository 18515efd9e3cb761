package chat

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"strings"

	"parley"
	"parley/jwtauth"
)

// JWT sign-in (docs/api.md, "Signing in with a JWT"): a token shaped as a
// JWT is checked by Config.JWT, and the user it names is provisioned on
// first sight from its (issuer, subject).

// JWTVerifier checks a JWT and returns the identity it names
// (*jwtauth.Verifier implements it); it fails with a *jwtauth.Error.
type JWTVerifier interface {
	Verify(ctx context.Context, token string) (jwtauth.Identity, error)
}

// externalPrefix starts every id derived from an outside identity:
// "x" and 26 base32 characters, 27 in all, where parley.NewID makes 26,
// so that the two never meet.
const externalPrefix = "x"

// ExternalUserID is the account id of the user that issuer knows as
// subject: "x" and 130 bits of SHA-256 over both, in base32. Two issuers'
// subjects never share an id, and every node (and JWT or OpenID Connect
// sign-in alike) derives the same id for the same identity.
func ExternalUserID(issuer, subject string) string {
	h := sha256.New()
	h.Write([]byte("parley external user\x00"))
	h.Write(binary.AppendUvarint(nil, uint64(len(issuer))))
	h.Write([]byte(issuer))
	h.Write([]byte(subject))
	return externalPrefix + idEncoding.EncodeToString(h.Sum(nil))[:26]
}

// IsExternalUser reports whether id is an account of an outside identity
// (ExternalUserID): it has no password.
func IsExternalUser(id string) bool {
	return len(id) == 27 && strings.HasPrefix(id, externalPrefix)
}

// idEncoding is parley.NewID's alphabet: lower-case base32, no padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ExternalNames are the names an outside identity's new account tries,
// in order, the first free one taken: the wanted name made valid (its
// characters outside A-Z a-z 0-9 _ . - become _, cut to 32), then that
// name cut to 23 with "-" and 8 characters of the id, then "user-" and
// 26 characters of the id. A wanted name shorter than 3 valid characters
// (or none) starts at the last. The suffixes come from the id, so the
// same identity always gets the same name for the same clash, and an
// outside identity never takes over an existing account by its name.
// When all of them are taken (someone may have taken them ahead, as they
// can be known), ProvisionExternal falls back to "user-" and 16 random
// characters.
func ExternalNames(id, wanted string) []string {
	b := []byte(wanted)
	n := 0
	for _, c := range b {
		if n == 32 {
			break
		}
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		case c >= 0x80 && c < 0xc0: // a UTF-8 continuation byte: its lead byte made the _
			continue
		default:
			c = '_'
		}
		b[n] = c
		n++
	}
	name := strings.Trim(string(b[:n]), "_")
	last := "user-" + id[1:27]
	if len(name) < 3 {
		return []string{last}
	}
	return []string{name, name[:min(len(name), 23)] + "-" + id[1:9], last}
}

// ProvisionExternal returns the account of the user issuer knows as
// subject, creating it on first sight under the first free of
// ExternalNames(id, name). It is safe under any concurrency, over nodes
// too: of two first sights at once one creates the account and the other
// finds it (the id is the store's key). Fails with CodeUnauthorized for
// an account deleted since (DELETE /api/me: its id is never given out
// again), CodeConflict when every name is taken.
func (s *Service) ProvisionExternal(ctx context.Context, issuer, subject, name string) (parley.User, error) {
	return s.provisionExternal(ctx, issuer, subject, name, nil)
}

// provisionExternal is ProvisionExternal; admit, when not nil, is asked
// before an account is made, and its error refuses the first sight.
func (s *Service) provisionExternal(ctx context.Context, issuer, subject, name string, admit func() error) (parley.User, error) {
	id := ExternalUserID(issuer, subject)
	u, err := s.store.User(ctx, id)
	if err == nil {
		return liveExternal(u)
	}
	if parley.ErrorCode(err) != parley.CodeNotFound {
		return parley.User{}, err
	}
	if admit != nil {
		if err := admit(); err != nil {
			return parley.User{}, err
		}
	}
	// The names of ExternalNames, then, should every one be taken (they
	// can be known ahead: the id comes from the issuer and subject, so
	// someone may have taken them to keep this identity out), three
	// random ones, which cannot be.
	names := ExternalNames(id, name)
	for range 3 {
		names = append(names, "user-"+parley.NewID()[:16])
	}
	for _, n := range names {
		u, err := s.store.CreateUser(ctx, parley.NewUser{ID: id, Name: n})
		if err == nil {
			s.provisioned.Inc()
			return u, nil
		}
		if parley.ErrorCode(err) != parley.CodeConflict {
			return parley.User{}, err
		}
		// The id is taken (another node made the account first) or the
		// name is.
		if u, err := s.store.User(ctx, id); err == nil {
			return liveExternal(u)
		}
	}
	return parley.User{}, parley.Errorf(parley.CodeConflict, "no free name for the new account of %q: every one of %v and three random ones is taken", subject, ExternalNames(id, name))
}

// LoginExternal signs in the user issuer knows as subject (OpenID
// Connect sign-in, after the provider vouched for the identity): it
// provisions the account on first sight, as ProvisionExternal does (the
// same account as a JWT of the same issuer and subject), and returns a
// new access token like Login's. Fails as ProvisionExternal does, and
// with CodeUnauthorized for an account deleted meanwhile. admit, when
// not nil, is asked before a first sight makes the account (the REST
// API's sign-up limit per address), and its error is returned.
func (s *Service) LoginExternal(ctx context.Context, issuer, subject, name string, admit func() error) (string, parley.User, error) {
	u, err := s.provisionExternal(ctx, issuer, subject, name, admit)
	if err != nil {
		return "", parley.User{}, err
	}
	token, err := s.newToken(ctx, u)
	if parley.ErrorCode(err) == parley.CodeNotFound {
		return "", parley.User{}, parley.Errorf(parley.CodeUnauthorized, "the account of this identity was deleted")
	}
	if err != nil {
		return "", parley.User{}, err
	}
	return token, u, nil
}

// deletedAccount reports whether u is a deleted account, as the stores
// keep it (sqlite DeleteUser: renamed "deleted-user:" + id).
func deletedAccount(u parley.User) bool { return strings.HasPrefix(u.Name, "deleted-user:") }

// liveExternal refuses a deleted account.
func liveExternal(u parley.User) (parley.User, error) {
	if deletedAccount(u) {
		return parley.User{}, parley.Errorf(parley.CodeUnauthorized, "the account of this identity was deleted")
	}
	return u, nil
}

// authenticateJWT checks a JWT and returns its user (provisioned on first
// sight) and a Token for the session: the hash of the JWT, and its exp as
// the expiry, so that a transport ends the session when it passes, as it
// does for Parley's own tokens.
func (s *Service) authenticateJWT(ctx context.Context, token string) (parley.User, parley.Token, error) {
	id, err := s.jwt.Verify(ctx, token)
	if err != nil {
		var je *jwtauth.Error
		if errors.As(err, &je) {
			return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "%v", err)
		}
		return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "jwt: %v", err)
	}
	u, err := s.ProvisionExternal(ctx, id.Issuer, id.Subject, id.Name)
	if err != nil {
		return parley.User{}, parley.Token{}, err
	}
	// CreatedAt is the sign-in's time (auth_time, else iat; zero for
	// neither), as a Parley token's is its sign-in's: DeleteAccountSignedIn.
	return u, parley.Token{Hash: tokenHash(token), UserID: u.ID, CreatedAt: id.SignedInAt, ExpiresAt: id.ExpiresAt}, nil
}

// isJWT reports whether token goes to Config.JWT: one is set and the
// token has a JWT's shape (a scan of its characters, nothing decoded).
func (s *Service) isJWT(token string) bool {
	return s.jwt != nil && jwtauth.LooksLikeJWT(token)
}

// errJWTRevoke refuses the revocation of a JWT (DELETE /api/tokens/current).
func errJWTRevoke() error {
	return parley.Errorf(parley.CodeInvalid, "a JWT cannot be revoked by Parley: it works until its exp; sign out at its issuer")
}

// errNoPassword refuses a password check of an outside identity's account.
func errNoPassword() error {
	return parley.Errorf(parley.CodeForbidden, "this account signs in with a JWT or OpenID Connect and has no password: its identity provider manages it")
}
