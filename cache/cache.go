package cache

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
)

// Defaults for the zero fields of Config.
const (
	DefaultRecentMessages = 200
	DefaultMaxRooms       = 10_000
	DefaultMaxUsers       = 100_000
	DefaultMaxTokens      = 100_000
)

// Config tunes a Store. Zero fields take the defaults above.
type Config struct {
	// RecentMessages is how many of the newest messages of each room are
	// kept; pages that reach older messages go to the inner store.
	RecentMessages int
	// MaxRooms caps the cached rooms (info, member ids, recent messages).
	MaxRooms int
	// MaxUsers caps the cached users (account and memberships).
	MaxUsers int
	// MaxTokens caps the cached access tokens.
	MaxTokens int
	// SearchBytes bounds the memory of the search indexes (search.go),
	// over all rooms; negative turns them off (every search goes to the
	// inner store).
	SearchBytes int64
	// Registerer, when not nil, gets the counter
	// parley_cache_requests_total{kind,result}.
	Registerer prometheus.Registerer
}

// Store is a parley.Store that serves the hot reads from memory and passes
// everything else to the inner store. Create it with New and install its
// Apply method as the inner store's OnCommit sink.
//
// Apply takes Store.mu: with SQLite it runs after the writer lock (txMu) is
// released, from the group-commit writer or flusher goroutine; with
// PostgreSQL under its sequencer's lock. The lock order across packages is
// in LOCKS.md at the repository root. No method holds mu while it calls
// the inner store.
type Store struct {
	inner     parley.Store
	recent    int
	maxRooms  int
	maxUsers  int
	maxTokens int
	metrics   metrics
	search    searchIndexes // guarded by mu

	mu     sync.RWMutex // guards the following fields and those of the states they hold
	rooms  map[string]*roomState
	users  map[string]*userState
	tokens map[string]*tokenState
	// revoked counts revocations, so that a token load that began before
	// one does not install what it read (see RevokeToken).
	revoked uint64
	// epochs is the last epoch of mention states given to a room
	// (roomState.mentionEpoch).
	epochs uint64
}

var _ parley.Store = (*Store)(nil)

// New returns a cache over inner. Its Apply method must receive every event
// inner commits, in commit order (inner's OnCommit sink); until it does, the
// cache may serve stale data.
func New(inner parley.Store, cfg Config) *Store {
	s := &Store{
		inner:     inner,
		recent:    orDefault(cfg.RecentMessages, DefaultRecentMessages),
		maxRooms:  orDefault(cfg.MaxRooms, DefaultMaxRooms),
		maxUsers:  orDefault(cfg.MaxUsers, DefaultMaxUsers),
		maxTokens: orDefault(cfg.MaxTokens, DefaultMaxTokens),
		metrics:   newMetrics(cfg.Registerer),
		rooms:     make(map[string]*roomState),
		users:     make(map[string]*userState),
		tokens:    make(map[string]*tokenState),
	}
	s.search.budget = cfg.SearchBytes
	if s.search.budget == 0 {
		s.search.budget = DefaultSearchBytes
	}
	s.search.rooms = make(map[*roomState]struct{})
	return s
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// CreateUser passes through to the inner store.
func (s *Store) CreateUser(ctx context.Context, u parley.NewUser) (parley.User, error) {
	return s.inner.CreateUser(ctx, u)
}

// UserByName passes through to the inner store: it is only used to log in.
func (s *Store) UserByName(ctx context.Context, name string) (parley.User, []byte, error) {
	return s.inner.UserByName(ctx, name)
}

// CreateToken passes through to the inner store.
func (s *Store) CreateToken(ctx context.Context, t parley.Token) error {
	return s.inner.CreateToken(ctx, t)
}

// CreateRoom passes through to the inner store; its events fill the cache.
func (s *Store) CreateRoom(ctx context.Context, r parley.NewRoom) (parley.Room, bool, error) {
	return s.inner.CreateRoom(ctx, r)
}

// Join passes through to the inner store; its events update the cache.
func (s *Store) Join(ctx context.Context, roomID, userID string) (parley.Room, bool, error) {
	return s.inner.Join(ctx, roomID, userID)
}

// Leave passes through to the inner store; its events update the cache.
func (s *Store) Leave(ctx context.Context, roomID, userID string) (parley.Room, error) {
	return s.inner.Leave(ctx, roomID, userID)
}

// Send passes through to the inner store; its events update the cache.
func (s *Store) Send(ctx context.Context, m parley.NewMessage) (parley.Message, bool, error) {
	return s.inner.Send(ctx, m)
}

// MarkRead passes through to the inner store; its events update the cache.
func (s *Store) MarkRead(ctx context.Context, roomID, userID string, seq int64) (parley.Member, error) {
	return s.inner.MarkRead(ctx, roomID, userID, seq)
}

// Ping passes through to the inner store.
func (s *Store) Ping(ctx context.Context) error { return s.inner.Ping(ctx) }

// Close closes the inner store and drops the cached state.
func (s *Store) Close() error {
	err := s.inner.Close()
	s.mu.Lock()
	clear(s.rooms)
	clear(s.users)
	clear(s.tokens)
	s.search.reset()
	s.mu.Unlock()
	return err
}

// User returns the account with that id, from memory after the first read
// (accounts never change).
func (s *Store) User(ctx context.Context, id string) (parley.User, error) {
	s.mu.RLock()
	if u := s.users[id]; u != nil && u.hasUser {
		u.used.Store(true)
		user := u.user
		s.mu.RUnlock()
		s.metrics.hit(kindUser)
		return user, nil
	}
	revoked := s.revoked
	s.mu.RUnlock()
	s.metrics.miss(kindUser)
	user, err := s.inner.User(ctx, id)
	if err != nil {
		return user, err
	}
	s.mu.Lock()
	if s.revoked != revoked { // what we read may be a deleted account's old self
		s.mu.Unlock()
		return user, nil
	}
	u := s.userLocked(id)
	u.user, u.hasUser = user, true
	s.mu.Unlock()
	return user, nil
}

// TokenUser returns the owner of an unexpired token. A token found by the
// inner store is kept until it expires; its expiry is checked on every hit,
// and an expired one is dropped and asked of the inner store again, which
// has the last word.
func (s *Store) TokenUser(ctx context.Context, hash []byte, now time.Time) (parley.User, parley.Token, error) {
	s.mu.RLock()
	t := s.tokens[string(hash)]
	if t != nil && now.Before(t.token.ExpiresAt) {
		t.used.Store(true)
		user, tok := t.user, t.token
		s.mu.RUnlock()
		s.metrics.hit(kindToken)
		tok.Hash = hash // as the inner store does; the cache keeps no caller's slice
		return user, tok, nil
	}
	s.mu.RUnlock()
	if t != nil {
		s.mu.Lock()
		if s.tokens[string(hash)] == t {
			delete(s.tokens, string(hash))
		}
		s.mu.Unlock()
	}
	s.metrics.miss(kindToken)
	s.mu.RLock()
	revoked := s.revoked
	s.mu.RUnlock()
	user, tok, err := s.inner.TokenUser(ctx, hash, now)
	if err != nil {
		return user, tok, err
	}
	s.mu.Lock()
	if s.revoked != revoked { // what we read may be revoked already
		s.mu.Unlock()
		return user, tok, nil
	}
	t = &tokenState{user: user, token: tok}
	t.token.Hash = nil
	t.used.Store(true)
	s.tokens[string(hash)] = t
	evictLocked(s.tokens, s.maxTokens)
	s.mu.Unlock()
	return user, tok, nil
}

// A tokenState is a cached token and its owner; both never change, until
// the token is revoked.
type tokenState struct {
	used  clockBit
	user  parley.User
	token parley.Token
}

func (t *tokenState) busy() bool          { return false }
func (t *tokenState) drop()               {}
func (t *tokenState) clockBit() *clockBit { return &t.used }
