package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"regexp"
	"runtime"

	"parley"

	"golang.org/x/crypto/argon2"
)

// KDF is the argon2id cost of password hashing.
type KDF struct {
	Time    uint32 // passes
	Memory  uint32 // KiB
	Threads uint8
}

// DefaultKDF is OWASP's minimum argon2id setting (19 MiB, 2 passes, 1
// thread): about 20 ms a hash on one core.
var DefaultKDF = KDF{Time: 2, Memory: 19 * 1024, Threads: 1}

// kdfConcurrency bounds how many hashes run at once, so that a stampede of
// logins costs time, not memory: each hash holds KDF.Memory.
func kdfConcurrency() int { return 2 * runtime.GOMAXPROCS(0) }

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,32}$`)

// Password length bounds, in bytes.
const (
	MinPassword = 8
	MaxPassword = 1024
)

// Register creates an account.
func (s *Service) Register(ctx context.Context, name, password string) (parley.User, error) {
	if !namePattern.MatchString(name) {
		return parley.User{}, parley.Errorf(parley.CodeInvalid, "name must be 3 to 32 of A-Z a-z 0-9 _ . -")
	}
	if len(password) < MinPassword || len(password) > MaxPassword {
		return parley.User{}, parley.Errorf(parley.CodeInvalid, "password must be %d to %d bytes", MinPassword, MaxPassword)
	}
	hash, err := s.hashPassword(ctx, password, nil)
	if err != nil {
		return parley.User{}, err
	}
	return s.store.CreateUser(ctx, parley.NewUser{Name: name, PasswordHash: hash})
}

// Login checks a name and password and returns a new access token.
func (s *Service) Login(ctx context.Context, name, password string) (string, parley.User, error) {
	denied := parley.Errorf(parley.CodeUnauthorized, "wrong name or password")
	if !namePattern.MatchString(name) || len(password) > MaxPassword {
		return "", parley.User{}, denied
	}
	u, ok, err := s.passwordMatches(ctx, name, password)
	if err != nil {
		return "", parley.User{}, err
	}
	if !ok {
		return "", parley.User{}, denied
	}
	token, err := s.newToken(ctx, u)
	// not_found: the account was deleted since its password was checked
	// (the store makes no token for a deleted account).
	if parley.ErrorCode(err) == parley.CodeNotFound {
		return "", parley.User{}, denied
	}
	if err != nil {
		return "", parley.User{}, err
	}
	return token, u, nil
}

// newToken makes and stores a new access token of u, good for the
// service's token lifetime: parley.CodeNotFound for a deleted account.
func (s *Service) newToken(ctx context.Context, u parley.User) (string, error) {
	secret := make([]byte, 32)
	rand.Read(secret)
	token := "pt_" + base64.RawURLEncoding.EncodeToString(secret)
	now := s.now()
	err := s.store.CreateToken(ctx, parley.Token{
		Hash: tokenHash(token), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(s.tokenTTL),
	})
	return token, err
}

// passwordMatches returns the account named name and whether password is
// its own: false, with no error, for an unknown name (after a hash of the
// same cost, so that timing does not tell which names exist) or a deleted
// account (no password).
func (s *Service) passwordMatches(ctx context.Context, name, password string) (parley.User, bool, error) {
	u, stored, err := s.store.UserByName(ctx, name)
	if parley.ErrorCode(err) == parley.CodeNotFound {
		s.hashPassword(ctx, password, nil)
		return parley.User{}, false, nil
	}
	if err != nil {
		return parley.User{}, false, err
	}
	if len(stored) < hashHeader {
		return u, false, nil
	}
	got, err := s.hashPassword(ctx, password, stored)
	if err != nil {
		return u, false, err
	}
	return u, subtle.ConstantTimeCompare(got, stored) == 1, nil
}

// Authenticate returns the owner of an unexpired access token (or of a
// valid JWT, with Config.JWT: see jwt.go; or the bot of an API key, with
// Config.Keys: see apikeys.go), or fails with CodeUnauthorized.
// It is AuthenticateToken without the token.
func (s *Service) Authenticate(ctx context.Context, token string) (parley.User, error) {
	u, _, err := s.AuthenticateToken(ctx, token)
	return u, err
}

// tokenHash is what the store keeps of a token: its SHA-256. Tokens carry
// 256 random bits, so a fast hash is enough.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// A stored password hash is: time (4 bytes), memory (4), threads (1),
// salt (16), key (32). Keeping the cost beside the hash lets the default
// change without breaking existing accounts.
const (
	saltLen    = 16
	keyLen     = 32
	hashHeader = 9 + saltLen
)

// hashPassword hashes password with a fresh salt and the service's cost
// (like == nil), or with the salt and cost of the stored hash like.
func (s *Service) hashPassword(ctx context.Context, password string, like []byte) ([]byte, error) {
	k := s.kdf
	salt := make([]byte, saltLen)
	if like == nil {
		rand.Read(salt)
	} else {
		k = KDF{Time: binary.BigEndian.Uint32(like), Memory: binary.BigEndian.Uint32(like[4:]), Threads: like[8]}
		copy(salt, like[9:hashHeader])
		if k.Time == 0 || k.Threads == 0 || k.Memory > 1<<22 || k.Time > 64 {
			k = s.kdf
		}
	}
	select {
	case s.kdfSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, parley.Errorf(parley.CodeUnavailable, "request cancelled")
	}
	key := argon2.IDKey([]byte(password), salt, k.Time, k.Memory, k.Threads, keyLen)
	<-s.kdfSlots
	out := make([]byte, 0, hashHeader+keyLen)
	out = binary.BigEndian.AppendUint32(out, k.Time)
	out = binary.BigEndian.AppendUint32(out, k.Memory)
	out = append(out, k.Threads)
	out = append(out, salt...)
	return append(out, key...), nil
}

// UserByName finds a user by name, for starting a 1:1 chat. Fails with
// CodeNotFound.
func (s *Service) UserByName(ctx context.Context, name string) (parley.User, error) {
	if !namePattern.MatchString(name) {
		return parley.User{}, parley.Errorf(parley.CodeNotFound, "no user named %q", name)
	}
	u, _, err := s.store.UserByName(ctx, name)
	if parley.ErrorCode(err) == parley.CodeNotFound {
		return parley.User{}, parley.Errorf(parley.CodeNotFound, "no user named %q", name)
	}
	return u, err
}
