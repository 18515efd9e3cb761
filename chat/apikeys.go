package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"parley"
)

// Server API keys and bots (design §3b "Identity"; docs/api.md "Server API
// keys and bots"). An operator creates a key with `parley apikey create`:
// it belongs to a bot account, made on first use of its name, which has
// no password and signs in only with its keys, over REST (Authorization:
// Bearer pk_…) and STOMP (passcode). The transports check the key's
// scopes (Token.Key); every call with a key is logged with its name. A
// key is looked up in the store on every use (no cache), so a revocation
// refuses the next call at once on every node; KeyWatch ends the live
// STOMP sessions of a revoked key.

// APIKeys keeps server API keys (sqlite.Store and postgres.Store
// implement it).
type APIKeys interface {
	// CreateAPIKey stores k; CodeNotFound for an unknown user,
	// CodeNameTaken for a name or id in use.
	CreateAPIKey(ctx context.Context, k parley.APIKey) (parley.APIKey, error)
	// RevokeAPIKey revokes the key named name (the first revocation
	// stays); CodeNotFound for an unknown name.
	RevokeAPIKey(ctx context.Context, name string, at time.Time) (parley.APIKey, error)
	// APIKey returns the key of id and its bot; CodeNotFound if unknown.
	APIKey(ctx context.Context, id string) (parley.APIKey, parley.User, error)
	// APIKeys returns every key, by name.
	APIKeys(ctx context.Context) ([]parley.APIKey, error)
	// RevokedAPIKeys returns the keys revoked at or after since.
	RevokedAPIKeys(ctx context.Context, since time.Time) ([]parley.APIKey, error)
}

// keyExpiry is when a key's session would expire: never, in practice (a
// key lasts until revoked).
var keyExpiry = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// CreateAPIKey creates a key named name with scopes for the bot account
// named bot (made now when no account has that name; refused with
// CodeConflict when a person's account has it) and returns the key's
// token, which is shown once: only its hash is kept. With a roomID the
// key acts in that room only (an incoming webhook: the transports refuse
// it elsewhere); its bot joins the room on its first post there, through
// the node that takes it (the caller may be a CLI beside the node, whose
// writes the node's caches would not hear). Fails with CodeInvalid
// for a bad name or an unknown scope, CodeNameTaken for a key name in
// use, CodeNotFound for an unknown room, CodeUnavailable without
// Config.Keys.
func (s *Service) CreateAPIKey(ctx context.Context, name string, scopes []string, bot, roomID string) (string, parley.APIKey, parley.User, error) {
	if s.keys == nil {
		return "", parley.APIKey{}, parley.User{}, parley.Errorf(parley.CodeUnavailable, "API keys are not available")
	}
	switch {
	case !namePattern.MatchString(name):
		return "", parley.APIKey{}, parley.User{}, parley.Errorf(parley.CodeInvalid, "key name must be 3 to 32 of A-Z a-z 0-9 _ . -")
	case !namePattern.MatchString(bot):
		return "", parley.APIKey{}, parley.User{}, parley.Errorf(parley.CodeInvalid, "bot name must be 3 to 32 of A-Z a-z 0-9 _ . -")
	case len(scopes) == 0:
		return "", parley.APIKey{}, parley.User{}, parley.Errorf(parley.CodeInvalid, "a key needs at least one scope of %s", strings.Join(parley.Scopes, ", "))
	}
	for _, sc := range scopes {
		if !slices.Contains(parley.Scopes, sc) {
			return "", parley.APIKey{}, parley.User{}, parley.Errorf(parley.CodeInvalid, "unknown scope %q: want %s", sc, strings.Join(parley.Scopes, ", "))
		}
	}
	u, _, err := s.store.UserByName(ctx, bot)
	switch {
	case parley.ErrorCode(err) == parley.CodeNotFound:
		u, err = s.store.CreateUser(ctx, parley.NewUser{ID: parley.NewBotID(), Name: bot})
		if err != nil {
			return "", parley.APIKey{}, parley.User{}, err
		}
	case err != nil:
		return "", parley.APIKey{}, parley.User{}, err
	case !parley.IsBotID(u.ID):
		return "", parley.APIKey{}, parley.User{}, parley.Errorf(parley.CodeConflict, "%q is a person's account, not a bot's", bot)
	}
	if roomID != "" {
		if _, err := s.store.Room(ctx, roomID); err != nil {
			return "", parley.APIKey{}, parley.User{}, err
		}
	}
	var secret [32]byte
	rand.Read(secret[:])
	sec := base64.RawURLEncoding.EncodeToString(secret[:])
	k := parley.APIKey{ID: parley.NewID(), Name: name, UserID: u.ID, Hash: keyHash(sec), Scopes: slices.Clone(scopes), RoomID: roomID}
	k, err = s.keys.CreateAPIKey(ctx, k)
	if err != nil {
		return "", parley.APIKey{}, parley.User{}, err
	}
	return parley.APIKeyPrefix + k.ID + "_" + sec, k, u, nil
}

// RevokeAPIKey revokes the key named name: the next call with it is
// refused on every node, and KeyWatch ends its live sessions.
func (s *Service) RevokeAPIKey(ctx context.Context, name string) (parley.APIKey, error) {
	if s.keys == nil {
		return parley.APIKey{}, parley.Errorf(parley.CodeUnavailable, "API keys are not available")
	}
	k, err := s.keys.RevokeAPIKey(ctx, name, s.now())
	if err == nil && s.onRevoke != nil {
		s.onRevoke(k.UserID, k.Hash)
	}
	return k, err
}

// ListAPIKeys returns every key, revoked ones too, by name.
func (s *Service) ListAPIKeys(ctx context.Context) ([]parley.APIKey, error) {
	if s.keys == nil {
		return nil, parley.Errorf(parley.CodeUnavailable, "API keys are not available")
	}
	return s.keys.APIKeys(ctx)
}

// authenticateKey checks an API key's token ("pk_" id "_" secret) and
// returns its bot and a Token whose Key is the key.
func (s *Service) authenticateKey(ctx context.Context, token string) (parley.User, parley.Token, error) {
	denied := parley.Errorf(parley.CodeUnauthorized, "unknown or revoked API key")
	id, secret, ok := strings.Cut(token[len(parley.APIKeyPrefix):], "_")
	if s.keys == nil || !ok || id == "" || secret == "" {
		return parley.User{}, parley.Token{}, denied
	}
	k, u, err := s.keys.APIKey(ctx, id)
	if parley.ErrorCode(err) == parley.CodeNotFound {
		return parley.User{}, parley.Token{}, denied
	}
	if err != nil {
		return parley.User{}, parley.Token{}, err
	}
	if subtle.ConstantTimeCompare(keyHash(secret), k.Hash) != 1 || k.RevokedAt != nil {
		return parley.User{}, parley.Token{}, denied
	}
	return u, parley.Token{Hash: k.Hash, UserID: u.ID, CreatedAt: k.CreatedAt, ExpiresAt: keyExpiry, Key: &k}, nil
}

func keyHash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// KeyWatch ends the live sessions of the API keys revoked elsewhere (by
// `parley apikey revoke`, or on another node): every Every it asks the
// store for the keys revoked since its last look and calls
// Config.OnRevoke for each new one. Start it with StartKeyWatch; Close
// stops it.
type KeyWatch struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// DefaultKeyWatchEvery is how often KeyWatch looks for revoked keys.
const DefaultKeyWatchEvery = 2 * time.Second

// StartKeyWatch starts a KeyWatch looking every every (DefaultKeyWatchEvery
// when zero); nil without Config.Keys or Config.OnRevoke.
func (s *Service) StartKeyWatch(every time.Duration) *KeyWatch {
	if s.keys == nil || s.onRevoke == nil {
		return nil
	}
	if every <= 0 {
		every = DefaultKeyWatchEvery
	}
	w := &KeyWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go s.watchKeys(w, every)
	return w
}

// watchKeys is the KeyWatch's goroutine. Each look reads every revoked
// key (a short list: the partial index api_keys_revoked holds only them)
// and ends the sessions of those it has not seen before; the keys revoked
// before it started are seen at its first look (no session can open with
// them). Reading them all, rather than those revoked since the last look,
// never misses a revocation whose commit came long after its time.
func (s *Service) watchKeys(w *KeyWatch, every time.Duration) {
	defer close(w.done)
	seen := map[string]bool{}
	t := time.NewTicker(every)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
		keys, err := s.keys.RevokedAPIKeys(context.Background(), time.Time{})
		if err != nil {
			slog.Warn("api key revocations", "err", err)
			continue
		}
		for _, k := range keys {
			if !seen[k.ID] {
				seen[k.ID] = true
				if !first { // a failed first look primes nothing: ending no session is harmless
					s.onRevoke(k.UserID, k.Hash)
				}
			}
		}
	}
}

// Close stops the watch and waits for its goroutine; nil-safe.
func (w *KeyWatch) Close() {
	if w == nil {
		return
	}
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
