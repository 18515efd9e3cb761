package redis

import (
	"context"
	"sync"
	"time"

	"parley"
)

// accounts is each node's own memory of users and access tokens. Both never
// change once written (there is no rename and no revocation; a token only
// expires, which is checked on every hit), so, unlike room data, they need
// no sharing through Redis to stay correct: a node that has read one keeps
// it, and requests stop reading PostgreSQL to authenticate.
type accounts struct {
	mu     sync.RWMutex // guards the following fields
	users  map[string]parley.User
	tokens map[string]tokenEntry // by string(hash)
}

type tokenEntry struct {
	user  parley.User
	token parley.Token
}

// maxAccounts bounds each map; a full map starts over (cheap to refill).
const maxAccounts = 100_000

// User implements parley.Store, from memory after the first read.
func (h *HotStore) User(ctx context.Context, id string) (parley.User, error) {
	h.acc.mu.RLock()
	u, ok := h.acc.users[id]
	h.acc.mu.RUnlock()
	if ok {
		h.m.hit(kindUser)
		return u, nil
	}
	h.m.miss(kindUser)
	u, err := h.Store.User(ctx, id)
	if err != nil {
		return u, err
	}
	h.acc.mu.Lock()
	if h.acc.users == nil || len(h.acc.users) >= maxAccounts {
		h.acc.users = map[string]parley.User{}
	}
	h.acc.users[id] = u
	h.acc.mu.Unlock()
	return u, nil
}

// TokenUser implements parley.Store, from memory until the token expires.
func (h *HotStore) TokenUser(ctx context.Context, hash []byte, now time.Time) (parley.User, parley.Token, error) {
	h.acc.mu.RLock()
	e, ok := h.acc.tokens[string(hash)]
	h.acc.mu.RUnlock()
	if ok {
		h.m.hit(kindToken)
		if now.Before(e.token.ExpiresAt) {
			return e.user, e.token, nil
		}
		return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "access token expired")
	}
	h.m.miss(kindToken)
	u, t, err := h.Store.TokenUser(ctx, hash, now)
	if err != nil {
		return u, t, err
	}
	h.acc.mu.Lock()
	if h.acc.tokens == nil || len(h.acc.tokens) >= maxAccounts {
		h.acc.tokens = map[string]tokenEntry{}
	}
	h.acc.tokens[string(hash)] = tokenEntry{u, t}
	h.acc.mu.Unlock()
	return u, t, nil
}
