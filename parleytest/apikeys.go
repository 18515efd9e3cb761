package parleytest

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"parley"
)

// APIKeyStore is the part of a store that keeps server API keys (design
// §3b "Identity"): sqlite.Store and postgres.Store implement it.
type APIKeyStore interface {
	CreateAPIKey(ctx context.Context, k parley.APIKey) (parley.APIKey, error)
	RevokeAPIKey(ctx context.Context, name string, at time.Time) (parley.APIKey, error)
	APIKey(ctx context.Context, id string) (parley.APIKey, parley.User, error)
	APIKeys(ctx context.Context) ([]parley.APIKey, error)
	RevokedAPIKeys(ctx context.Context, since time.Time) ([]parley.APIKey, error)
}

// RunAPIKeyTests checks the API keys of the stores newStore makes, which
// must implement APIKeyStore: a key is read back by id with its bot
// account, listed by name, refused for a taken name or id and for an
// unknown or deleted user, and revoked once (a second revocation keeps
// the first time), which RevokedAPIKeys then lists.
func RunAPIKeyTests(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ks, ok := s.(APIKeyStore)
	if !ok {
		t.Fatalf("%T does not implement APIKeyStore", s)
	}
	ctx := context.Background()
	bot, err := s.CreateUser(ctx, parley.NewUser{ID: parley.NewBotID(), Name: "ci-bot"})
	if err != nil {
		t.Fatalf("CreateUser(bot) error = %v", err)
	}
	at := parley.Now().Add(-time.Hour)
	want := parley.APIKey{ID: "k1", Name: "ci", UserID: bot.ID, Hash: []byte{1, 2, 3},
		Scopes: []string{parley.ScopePost, parley.ScopeHistory}, CreatedAt: at}
	if _, err := ks.CreateAPIKey(ctx, want); err != nil {
		t.Fatalf("CreateAPIKey(ci) error = %v", err)
	}
	got, u, err := ks.APIKey(ctx, "k1")
	if err != nil || !sameKey(got, want) || u.ID != bot.ID || u.Name != "ci-bot" {
		t.Errorf("APIKey(k1) = %+v, %+v, %v; want %+v of ci-bot", got, u, err, want)
	}
	if !parley.IsBotID(u.ID) {
		t.Errorf("bot id %q is not a bot's", u.ID)
	}
	_, _, err = ks.APIKey(ctx, "nope")
	wantCode(t, "APIKey(unknown)", err, parley.CodeNotFound)

	_, err = ks.CreateAPIKey(ctx, parley.APIKey{ID: "k2", Name: "ci", UserID: bot.ID, Hash: []byte{4}})
	wantCode(t, "CreateAPIKey(taken name)", err, parley.CodeNameTaken)
	_, err = ks.CreateAPIKey(ctx, parley.APIKey{ID: "k1", Name: "other", UserID: bot.ID, Hash: []byte{4}})
	wantCode(t, "CreateAPIKey(taken id)", err, parley.CodeNameTaken)
	_, err = ks.CreateAPIKey(ctx, parley.APIKey{ID: "k3", Name: "ghost", UserID: "nobody", Hash: []byte{4}})
	wantCode(t, "CreateAPIKey(unknown user)", err, parley.CodeNotFound)
	second, err := ks.CreateAPIKey(ctx, parley.APIKey{ID: "k4", Name: "alerts", UserID: bot.ID, Hash: []byte{5}, Scopes: []string{parley.ScopePost}, RoomID: "r-ops"})
	if err != nil || second.CreatedAt.IsZero() {
		t.Fatalf("CreateAPIKey(alerts) = %+v, %v; want a creation time", second, err)
	}
	if got, _, err := ks.APIKey(ctx, "k4"); err != nil || got.RoomID != "r-ops" {
		t.Errorf("APIKey(k4) = %+v, %v; want its room r-ops", got, err)
	}

	all, err := ks.APIKeys(ctx)
	if err != nil || len(all) != 2 || all[0].Name != "alerts" || all[1].Name != "ci" {
		t.Errorf("APIKeys() = %+v, %v; want alerts, ci", all, err)
	}
	if revoked, err := ks.RevokedAPIKeys(ctx, time.Time{}); err != nil || len(revoked) != 0 {
		t.Errorf("RevokedAPIKeys() before any = %+v, %v", revoked, err)
	}
	first := parley.Now()
	r, err := ks.RevokeAPIKey(ctx, "ci", first)
	if err != nil || r.RevokedAt == nil || !r.RevokedAt.Equal(first) {
		t.Fatalf("RevokeAPIKey(ci) = %+v, %v; want revoked at %v", r, err, first)
	}
	if r, err := ks.RevokeAPIKey(ctx, "ci", first.Add(time.Minute)); err != nil || !r.RevokedAt.Equal(first) {
		t.Errorf("RevokeAPIKey(ci again) = %+v, %v; want the first revocation kept", r, err)
	}
	_, err = ks.RevokeAPIKey(ctx, "nope", first)
	wantCode(t, "RevokeAPIKey(unknown)", err, parley.CodeNotFound)
	if got, _, err := ks.APIKey(ctx, "k1"); err != nil || got.RevokedAt == nil {
		t.Errorf("APIKey(k1) after revocation = %+v, %v; want it revoked", got, err)
	}
	revoked, err := ks.RevokedAPIKeys(ctx, first)
	if err != nil || len(revoked) != 1 || revoked[0].Name != "ci" {
		t.Errorf("RevokedAPIKeys(since the revocation) = %+v, %v; want ci", revoked, err)
	}
	if revoked, err := ks.RevokedAPIKeys(ctx, first.Add(time.Second)); err != nil || len(revoked) != 0 {
		t.Errorf("RevokedAPIKeys(after it) = %+v, %v; want none", revoked, err)
	}
}

func sameKey(a, b parley.APIKey) bool {
	return a.ID == b.ID && a.Name == b.Name && a.UserID == b.UserID && bytes.Equal(a.Hash, b.Hash) &&
		slices.Equal(a.Scopes, b.Scopes) && a.RoomID == b.RoomID && a.CreatedAt.Equal(b.CreatedAt) && (a.RevokedAt == nil) == (b.RevokedAt == nil)
}
