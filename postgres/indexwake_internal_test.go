package postgres

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"parley/parleytest"
	"parley/postgres/pgtest"
)

// never is a backstop no test outlives: an indexer tuned with it rounds
// only when woken.
const never = time.Hour

// wakeLog receives what an indexer's hooks report, for a test to wait on.
type wakeLog struct {
	rounds   chan int    // each round's messages (-1: failed)
	heard    chan string // each announcement of the schema heard: its node's mark
	listened chan uint32 // each LISTEN: the connection's backend pid
}

func newWakeLog() *wakeLog {
	return &wakeLog{rounds: make(chan int, 1024), heard: make(chan string, 1024), listened: make(chan uint32, 16)}
}

// tuning reports to l, with the backstop given. A report that finds its
// channel full is dropped, never blocking the indexer.
func (l *wakeLog) tuning(backstop time.Duration) indexTuning {
	return indexTuning{
		backstop:   backstop,
		afterRound: func(n int) { report(l.rounds, n) },
		heard:      func(node string) { report(l.heard, node) },
		listened:   func(pid uint32) { report(l.listened, pid) },
	}
}

func report[T any](c chan<- T, v T) {
	select {
	case c <- v:
	default:
	}
}

// next waits, at most 30 s, for the next report on c.
func next[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30 s", what)
		panic("unreachable")
	}
}

// indexing waits for a round of l that indexes messages and returns how
// many.
func (l *wakeLog) indexing(t *testing.T) int {
	t.Helper()
	for {
		if n := next(t, l.rounds, "round that indexes"); n != 0 {
			return n
		}
	}
}

// openNode opens a node on the database at url with its indexer tuned,
// closed when the test ends, and no liveness probe.
func openNode(t *testing.T, url string, tune indexTuning) *Store {
	t.Helper()
	s, err := open(context.Background(), Config{URL: url, LivenessTimeout: -1}, tune)
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// heldNode opens a node whose indexer never gets past its first round
// until release is closed (at the latest when the test ends): what it
// sends meanwhile, only other nodes index.
func heldNode(t *testing.T, url string, tune indexTuning) (s *Store, release func()) {
	t.Helper()
	held := make(chan struct{})
	tune.beforeRound = func() error { <-held; return nil }
	s = openNode(t, url, tune)
	release = sync.OnceFunc(func() { close(held) })
	t.Cleanup(release) // before the Close of openNode
	return s, release
}

// closeHeld closes a held node as a node stops while its indexer is
// behind: the indexer stops before its round, then the node closes.
func closeHeld(t *testing.T, s *Store, release func()) {
	t.Helper()
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	<-s.idx.ctx.Done() // Close has stopped the indexer: its held round will not run
	release()
	next(t, closed, "Close")
}

// sentinel announces, as a node named "sentinel" would, on s's schema:
// the notifications of one channel arrive in the order of their
// commits, so a listener that hears it has heard every announcement made
// before it.
func sentinel(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), `SELECT pg_notify($1, 'sentinel ' || current_schema())`, notifyChannel); err != nil {
		t.Fatalf("sentinel NOTIFY: %v", err)
	}
}

// findsOnly checks that searching the room on s for word finds the
// message seq and nothing else.
func findsOnly(t *testing.T, s *Store, roomID, word string, seq int64) {
	t.Helper()
	found, err := s.SearchRoom(context.Background(), roomID, parleytest.MustQuery(t, word), 0, 10)
	if err != nil || len(found) != 1 || found[0].Seq != seq {
		t.Errorf("SearchRoom(%s) on node %s = %v, %v; want seq %d", word, s.idx.node, found, err, seq)
	}
}

// indexQueries returns the counts of x's statements by kind.
func indexQueries(x *indexer) map[string]float64 {
	q := map[string]float64{}
	for _, kind := range []string{"index", "behind", "notify"} {
		q[kind] = testutil.ToFloat64(x.rounds.WithLabelValues(kind))
	}
	return q
}

// TestIndexerIdleSendsNothing: once its first round is done, an indexer
// sends no statement while another node commits writes that store no
// message (which wake nothing), sends a message its own indexer indexes,
// and closes: none of it is announced. A sentinel announcement, made
// after all of it, is the first the listener hears, and the round it
// wakes is the idle indexer's only one.
func TestIndexerIdleSendsNothing(t *testing.T) {
	url := pgtest.Schema(t)
	la, lb := newWakeLog(), newWakeLog()
	a := openNode(t, url, la.tuning(never))
	if n := next(t, la.rounds, "first round"); n != 0 {
		t.Fatalf("the first round of an empty store indexed %d messages", n)
	}
	before := indexQueries(a.idx)
	b := openNode(t, url, lb.tuning(never))
	next(t, lb.rounds, "node b's first round")

	u := parleytest.MustCreateUser(t, b, "idle")
	v := parleytest.MustCreateUser(t, a, "other")
	r := parleytest.MustCreateRoom(t, b, u, "quiet", 0)
	parleytest.MustJoin(t, a, r, v)
	if len(a.idx.wake) != 0 || len(b.idx.wake) != 0 {
		t.Error("writes that store no message woke an indexer")
	}
	parleytest.MustSend(t, b, r, u, "indexed where it was sent")
	if n := lb.indexing(t); n != 1 {
		t.Errorf("node b's round indexed %d messages, want its 1", n)
	}
	b.Close()
	if q := indexQueries(b.idx); q["notify"] != 0 {
		t.Errorf("node b announced %v times, with nothing left behind", q["notify"])
	}

	sentinel(t, a)
	if node := next(t, la.heard, "the sentinel"); node != "sentinel" {
		t.Errorf("node a heard an announcement of %q before the sentinel", node)
	}
	if n := next(t, la.rounds, "the sentinel's round"); n != 0 {
		t.Errorf("the sentinel's round indexed %d messages, want 0", n)
	}
	want := map[string]float64{"index": before["index"] + 1, "behind": before["behind"] + 1, "notify": 0}
	if after := indexQueries(a.idx); !maps.Equal(after, want) {
		t.Errorf("the idle indexer's statements went from %v to %v, want %v", before, after, want)
	}
	select {
	case n := <-la.rounds:
		t.Errorf("the idle indexer ran another round (%d messages indexed)", n)
	default:
	}
}

// TestIndexerTakesOverAFailedRound: when a node's round fails, it
// announces so; another node, whose backstop is an hour, indexes the
// message and finds it.
func TestIndexerTakesOverAFailedRound(t *testing.T) {
	url := pgtest.Schema(t)
	la := newWakeLog()
	a := openNode(t, url, la.tuning(never))
	next(t, la.rounds, "first round")
	var calls atomic.Int32
	held := make(chan struct{})
	lb := newWakeLog()
	tb := lb.tuning(never)
	tb.beforeRound = func() error {
		switch calls.Add(1) {
		case 1:
			return nil // the first round, at Open
		case 2:
			return errors.New("refused, as by a database that cannot take it")
		}
		<-held // the retries wait for the test's end
		return nil
	}
	b := openNode(t, url, tb)
	t.Cleanup(func() { close(held) })          // before the Close of openNode
	next(t, lb.rounds, "node b's first round") // before the send: it must not index it

	u := parleytest.MustCreateUser(t, b, "sender")
	r := parleytest.MustCreateRoom(t, b, u, "failed", 0)
	m := parleytest.MustSend(t, b, r, u, "takeoverword from node b")
	if node := next(t, la.heard, "announcement"); node != b.idx.node {
		t.Errorf("node a heard %q, want node b's announcement %q", node, b.idx.node)
	}
	if n := la.indexing(t); n != 1 {
		t.Errorf("node a's round indexed %d messages, want the 1 of node b", n)
	}
	findsOnly(t, a, r.ID, "takeoverword", m.Seq)
}

// TestIndexerFailingNodesDoNotLoop: when every round of two nodes fails,
// the node with a message left behind announces it once, and neither
// wakes the other again: a failed round woken by an announcement, with
// nothing of its own node's left, announces nothing.
func TestIndexerFailingNodesDoNotLoop(t *testing.T) {
	url := pgtest.Schema(t)
	refuse := func() error { return errors.New("refused, as by a full disk") }
	la, lb := newWakeLog(), newWakeLog()
	ta, tb := la.tuning(never), lb.tuning(never)
	ta.beforeRound, tb.beforeRound = refuse, refuse
	a := openNode(t, url, ta)
	b := openNode(t, url, tb)
	next(t, la.rounds, "node a's first round")
	next(t, lb.rounds, "node b's first round")

	u := parleytest.MustCreateUser(t, b, "sender")
	r := parleytest.MustCreateRoom(t, b, u, "refused", 0)
	parleytest.MustSend(t, b, r, u, "left behind")
	if node := next(t, la.heard, "node b's announcement"); node != b.idx.node {
		t.Errorf("node a heard %q, want node b's announcement %q", node, b.idx.node)
	}
	for range 3 { // each retried after indexRetry, or woken by an announcement
		next(t, la.rounds, "a failed round of node a")
		next(t, lb.rounds, "a failed round of node b")
	}
	if qa, qb := indexQueries(a.idx), indexQueries(b.idx); qa["notify"] != 0 || qb["notify"] != 1 {
		t.Errorf("announcements: node a %v, node b %v; want 0 and 1", qa["notify"], qb["notify"])
	}
}

// TestIndexerRowSkippedLocked: a round skips an unindexed message whose
// row a write holds locked (a reaction in progress, here a lock taken by
// hand); the commit of a change to a message wakes the indexer again, and
// its round indexes it.
func TestIndexerRowSkippedLocked(t *testing.T) {
	url := pgtest.Schema(t)
	lb := newWakeLog()
	tb := lb.tuning(never)
	var calls atomic.Int32
	gate := make(chan struct{})
	tb.beforeRound = func() error {
		if calls.Add(1) == 2 { // the round the send wakes
			<-gate
		}
		return nil
	}
	b := openNode(t, url, tb)
	next(t, lb.rounds, "first round")
	u := parleytest.MustCreateUser(t, b, "sender")
	r := parleytest.MustCreateRoom(t, b, u, "locked", 0)
	m := parleytest.MustSend(t, b, r, u, "lockedword")

	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM messages WHERE room_id = $1 AND seq = $2 FOR NO KEY UPDATE`, r.ID, m.Seq); err != nil {
		t.Fatalf("lock the message's row: %v", err)
	}
	close(gate)
	if n := next(t, lb.rounds, "the round the send woke"); n != 0 {
		t.Fatalf("the round with the message's row locked indexed %d messages, want 0", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	parleytest.MustReact(t, b, r, u, m.Seq, "👍", true)
	if n := lb.indexing(t); n != 1 {
		t.Errorf("the round after the reaction indexed %d messages, want the 1 skipped", n)
	}
	findsOnly(t, b, r.ID, "lockedword", m.Seq)
}

// TestIndexerCloseHandsOver: a node that closes with a message its
// indexer has not indexed announces it; another node, whose backstop is
// an hour, indexes it and finds it.
func TestIndexerCloseHandsOver(t *testing.T) {
	url := pgtest.Schema(t)
	la := newWakeLog()
	a := openNode(t, url, la.tuning(never))
	next(t, la.rounds, "first round")
	b, release := heldNode(t, url, indexTuning{backstop: never})

	u := parleytest.MustCreateUser(t, b, "sender")
	r := parleytest.MustCreateRoom(t, b, u, "woken", 0)
	m := parleytest.MustSend(t, b, r, u, "wakeword from node b")
	node := b.idx.node
	closeHeld(t, b, release)
	if got := next(t, la.heard, "announcement"); got != node {
		t.Errorf("node a heard %q, want node b's announcement %q", got, node)
	}
	if n := la.indexing(t); n != 1 {
		t.Errorf("node a's round indexed %d messages, want the 1 of node b", n)
	}
	findsOnly(t, a, r.ID, "wakeword", m.Seq)
}

// TestIndexerBackstopFindsUnannounced: a message whose announcement never
// went out (the sender quiet, its indexer held, then closed) is indexed
// by the other node's backstop round.
func TestIndexerBackstopFindsUnannounced(t *testing.T) {
	url := pgtest.Schema(t)
	la := newWakeLog()
	a := openNode(t, url, la.tuning(50*time.Millisecond))
	b, release := heldNode(t, url, indexTuning{backstop: never, quiet: true})
	u := parleytest.MustCreateUser(t, b, "quiet")
	r := parleytest.MustCreateRoom(t, b, u, "unannounced", 0)
	m := parleytest.MustSend(t, b, r, u, "lostword")
	closeHeld(t, b, release) // as a node killed: nothing announced
	if n := la.indexing(t); n != 1 {
		t.Errorf("node a's backstop round indexed %d messages, want 1", n)
	}
	select {
	case <-la.heard:
		t.Error("node a heard an announcement of a quiet node")
	default:
	}
	findsOnly(t, a, r.ID, "lostword", m.Seq)
}

// TestIndexerListensAgain: when its LISTEN connection is cut, the
// listener connects again, wakes the indexer for what it may have missed,
// and hears the other nodes' announcements again.
func TestIndexerListensAgain(t *testing.T) {
	url := pgtest.Schema(t)
	la := newWakeLog()
	a := openNode(t, url, la.tuning(never))
	pid := next(t, la.listened, "LISTEN")
	next(t, la.rounds, "first round")
	b, release := heldNode(t, url, indexTuning{backstop: never})

	var ok bool
	if err := a.pool.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
	if again := next(t, la.listened, "LISTEN again"); again == pid {
		t.Fatalf("listening again on backend %d, the one terminated", again)
	}
	if n := next(t, la.rounds, "round after listening again"); n != 0 {
		t.Errorf("the round after listening again indexed %d messages, want 0", n)
	}

	u := parleytest.MustCreateUser(t, b, "sender")
	r := parleytest.MustCreateRoom(t, b, u, "again", 0)
	parleytest.MustSend(t, b, r, u, "heard again")
	closeHeld(t, b, release)
	if n := la.indexing(t); n != 1 {
		t.Errorf("node a's round indexed %d messages, want the 1 of node b", n)
	}
}
