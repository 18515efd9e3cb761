package postgres_test

import (
	"context"
	"testing"

	"parley/parleytest"
	"parley/postgres"
)

func TestExpiry(t *testing.T) {
	parleytest.RunExpiryTests(t, newStore)
}

// TestSweepLock: one holder of the retention lock at a time, over the
// cluster; released, it is free again.
func TestSweepLock(t *testing.T) {
	ctx := context.Background()
	a := newStore(t, nil).(*postgres.Store)
	b := newStore(t, nil).(*postgres.Store)
	release, ok, err := a.SweepLock(ctx)
	if err != nil || !ok {
		t.Fatalf("first SweepLock() = %v, %v, want it taken", ok, err)
	}
	if r, ok, err := b.SweepLock(ctx); err != nil || ok {
		t.Errorf("SweepLock() of a second node while held = %v, %v, want not taken", ok, err)
		if ok {
			r()
		}
	}
	release()
	r, ok, err := b.SweepLock(ctx)
	if err != nil || !ok {
		t.Fatalf("SweepLock() after the release = %v, %v, want it taken", ok, err)
	}
	r()
}
