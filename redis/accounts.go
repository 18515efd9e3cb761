package redis

import (
	"context"
	"sync"
	"time"

	"parley"
)

// accounts is each node's own memory of users and access tokens. A user
// changes only when its account is deleted (renamed, DELETE /api/me),
// which revokes all of its tokens before and after the rename: every node
// hears that revocation (revoke.go) and forgets the user with its tokens.
// So users need no sharing through Redis: a node that has read one keeps it, and
// requests stop reading PostgreSQL to authenticate. A token expires, which
// is checked on every hit, and it can be revoked on any node: revoke.go
// tells every node, which forgets it, and while a node cannot hear those
// messages (its subscription is down) it serves no token from memory.
type accounts struct {
	mu     sync.RWMutex // guards the following fields
	users  map[string]parley.User
	tokens map[string]tokenEntry // by string(hash)
	// revoked moves with every revocation this node learns of and every
	// loss of the subscription, so that a token load that began before
	// one does not install what it read.
	revoked uint64
	// trusted is true while the revocation subscription is up (or before
	// it starts): only then are tokens served from and kept in memory.
	trusted bool
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
	h.acc.mu.RLock()
	revoked := h.acc.revoked
	h.acc.mu.RUnlock()
	u, err := h.Store.User(ctx, id)
	if err != nil {
		return u, err
	}
	h.acc.mu.Lock()
	if h.acc.revoked != revoked { // what we read may be a deleted account's old self
		h.acc.mu.Unlock()
		return u, nil
	}
	if h.acc.users == nil || len(h.acc.users) >= maxAccounts {
		h.acc.users = map[string]parley.User{}
	}
	h.acc.users[id] = u
	h.acc.mu.Unlock()
	return u, nil
}

// TokenUser implements parley.Store, from memory until the token expires
// or is revoked.
func (h *HotStore) TokenUser(ctx context.Context, hash []byte, now time.Time) (parley.User, parley.Token, error) {
	h.acc.mu.RLock()
	e, ok := h.acc.tokens[string(hash)]
	revoked, trusted := h.acc.revoked, h.acc.trusted
	h.acc.mu.RUnlock()
	if ok && trusted {
		h.m.hit(kindToken)
		if now.Before(e.token.ExpiresAt) {
			return e.user, e.token, nil
		}
		return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "access token expired")
	}
	h.m.miss(kindToken)
	u, t, err := h.Store.TokenUser(ctx, hash, now)
	if err != nil || !trusted {
		return u, t, err
	}
	h.acc.mu.Lock()
	if h.acc.trusted && h.acc.revoked == revoked { // else what we read may be revoked already
		if h.acc.tokens == nil || len(h.acc.tokens) >= maxAccounts {
			h.acc.tokens = map[string]tokenEntry{}
		}
		h.acc.tokens[string(hash)] = tokenEntry{u, t}
	}
	h.acc.mu.Unlock()
	return u, t, nil
}

// RevokeToken implements parley.Store: it revokes the token in
// PostgreSQL, forgets it here, and tells every node to forget it and end
// its sessions (revoke.go).
func (h *HotStore) RevokeToken(ctx context.Context, hash []byte) error {
	u, _, err := h.Store.TokenUser(ctx, hash, time.Time{}) // its owner, for the other nodes' sessions
	if parley.ErrorCode(err) == parley.CodeUnauthorized {
		return nil // unknown: revoked already, and told then
	}
	if err != nil {
		return err
	}
	if err := h.Store.RevokeToken(ctx, hash); err != nil {
		return err
	}
	h.forgetTokens(u.ID, hash)
	h.publishRevocation(ctx, revocation{User: u.ID, Hash: hash})
	return nil
}

// RevokeUserTokens implements parley.Store, as RevokeToken does for each
// of the user's tokens.
func (h *HotStore) RevokeUserTokens(ctx context.Context, userID string) error {
	if err := h.Store.RevokeUserTokens(ctx, userID); err != nil {
		return err
	}
	h.forgetTokens(userID, nil)
	h.publishRevocation(ctx, revocation{User: userID})
	return nil
}

// forgetTokens drops the token hash from memory, or with hash nil every
// token of userID and the user itself. Tokens are kept by hash alone, so the latter walks them
// all (at most maxAccounts): logging out everywhere is rare enough not to
// need a second index.
func (h *HotStore) forgetTokens(userID string, hash []byte) {
	h.acc.mu.Lock()
	defer h.acc.mu.Unlock()
	h.acc.revoked++
	if hash != nil {
		delete(h.acc.tokens, string(hash))
		return
	}
	for k, e := range h.acc.tokens {
		if e.user.ID == userID {
			delete(h.acc.tokens, k)
		}
	}
	delete(h.acc.users, userID) // a deleted account's is renamed (DeleteAccount)
}

// trustTokens drops every token from memory and, with trusted, starts
// keeping them again: the subscription is (back) up, or, without, it is
// lost and messages may be missed until it is back.
func (h *HotStore) trustTokens(trusted bool) {
	h.acc.mu.Lock()
	h.acc.revoked++
	h.acc.tokens = nil
	h.acc.trusted = trusted
	h.acc.mu.Unlock()
}
