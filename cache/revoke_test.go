package cache_test

import (
	"context"
	"testing"
	"time"

	"parley"
	"parley/cache"
)

// pausedTokens is a store whose TokenUser, once armed, reads the token and
// then waits: read is closed when it has read, and it returns when release
// is closed.
type pausedTokens struct {
	parley.Store
	read, release chan struct{}
}

func (p *pausedTokens) TokenUser(ctx context.Context, hash []byte, now time.Time) (parley.User, parley.Token, error) {
	u, t, err := p.Store.TokenUser(ctx, hash, now)
	if p.read != nil {
		close(p.read)
		<-p.release
	}
	return u, t, err
}

// TestRevokeDuringLoad: a token load that read the token before a
// revocation committed, and returns after it, does not install the token:
// once RevokeToken (or RevokeUserTokens) has returned, the cache refuses
// it.
func TestRevokeDuringLoad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		revoke func(c *cache.Store, hash []byte, userID string) error
	}{
		{"one token", func(c *cache.Store, hash []byte, _ string) error { return c.RevokeToken(ctx, hash) }},
		{"all of the user's", func(c *cache.Store, _ []byte, userID string) error { return c.RevokeUserTokens(ctx, userID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeStore(nil)
			p := &pausedTokens{Store: fake}
			c := cache.New(p, cache.Config{})
			fake.sink = c.Apply
			alice, err := c.CreateUser(ctx, parley.NewUser{Name: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			t0 := parley.Now()
			hash := []byte("h1")
			if err := c.CreateToken(ctx, parley.Token{Hash: hash, UserID: alice.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			p.read, p.release = make(chan struct{}), make(chan struct{})
			loaded := make(chan error, 1)
			go func() {
				_, _, err := c.TokenUser(ctx, hash, t0)
				loaded <- err
			}()
			<-p.read
			p.read = nil // the next reads do not pause
			if err := tc.revoke(c, hash, alice.ID); err != nil {
				t.Fatalf("revoke: %v", err)
			}
			close(p.release)
			if err := <-loaded; err != nil {
				t.Errorf("TokenUser asked before the revocation = %v, want the token", err)
			}
			if _, _, err := c.TokenUser(ctx, hash, t0); parley.ErrorCode(err) != parley.CodeUnauthorized {
				t.Errorf("TokenUser after the revocation = %v, want code %s", err, parley.CodeUnauthorized)
			}
		})
	}
}
