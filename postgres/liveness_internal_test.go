package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/postgres/pgtest"
)

// fakePinger is the probe's connection to a server that answers each
// ping after delay while answer holds, and otherwise never (a hung
// server: the ping waits for its deadline).
type fakePinger struct {
	answer *atomic.Bool
	delay  time.Duration
	pings  *atomic.Int64
}

func (p fakePinger) Ping(ctx context.Context) error {
	defer p.pings.Add(1)
	if !p.answer.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-time.After(p.delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (fakePinger) Close(context.Context) error { return nil }

// waitFor waits, at most 10 s, until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	parleytest.Eventually(t, 10*time.Second, cond, "%s: not within 10 s", what)
}

// TestLivenessRefusesAStoreThatDoesNotAnswer: a store whose pings are
// answered, slowly but within the probe's deadline, keeps taking writes;
// once two pings in a row go unanswered, new writes and reads are refused
// as unavailable without reaching the database (which is fine here: only
// the probe is told it hangs); once a ping is answered they go through
// again.
func TestLivenessRefusesAStoreThatDoesNotAnswer(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{URL: pgtest.Schema(t), LivenessTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var answer atomic.Bool
	var pings atomic.Int64
	answer.Store(true)
	l := newLiveness(nil, 400*time.Millisecond)
	l.connect = func(context.Context) (pinger, error) {
		return fakePinger{answer: &answer, delay: 100 * time.Millisecond, pings: &pings}, nil
	}
	s.startLiveness(l)
	n := 0
	newUser := func() (parley.User, error) {
		n++
		return s.CreateUser(ctx, parley.NewUser{Name: fmt.Sprintf("u%d", n), PasswordHash: []byte("h")})
	}

	waitFor(t, "five slow pings", func() bool { return pings.Load() >= 5 })
	if l.isDown() {
		t.Fatal("a store whose pings are answered within the deadline is held down")
	}
	u, err := newUser()
	if err != nil {
		t.Fatalf("CreateUser with slow pings: %v", err)
	}

	answer.Store(false)
	waitFor(t, "the store held down", l.isDown)
	if _, err := newUser(); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("CreateUser while the probe gets no answer: %v, want unavailable", err)
	}
	if _, err := s.User(ctx, u.ID); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("User while the probe gets no answer: %v, want unavailable", err)
	}
	if err := s.Ping(ctx); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("Ping while the probe gets no answer: %v, want unavailable", err)
	}

	answer.Store(true)
	waitFor(t, "the store up again", func() bool { return !l.isDown() })
	if _, err := newUser(); err != nil {
		t.Errorf("CreateUser once a ping is answered again: %v", err)
	}
}
