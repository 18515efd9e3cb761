package postgres

import (
	"context"
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
	heard    chan bool   // each announcement of the schema heard: its own
	listened chan uint32 // each LISTEN: the connection's backend pid
}

func newWakeLog() *wakeLog {
	return &wakeLog{rounds: make(chan int, 1024), heard: make(chan bool, 1024), listened: make(chan uint32, 16)}
}

// tuning reports to l, with the backstop given. A report that finds its
// channel full is dropped, never blocking the indexer.
func (l *wakeLog) tuning(backstop time.Duration) indexTuning {
	return indexTuning{
		backstop:   backstop,
		afterRound: func(n int) { report(l.rounds, n) },
		heard:      func(own bool) { report(l.heard, own) },
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
// before the test ends: what it sends, only other nodes index.
func heldNode(t *testing.T, url string, tune indexTuning) *Store {
	t.Helper()
	release := make(chan struct{})
	tune.beforeRound = func() { <-release }
	s := openNode(t, url, tune)
	t.Cleanup(func() { close(release) }) // before the Close of openNode
	return s
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
// with nothing to index sends no statement, while two nodes commit writes
// that store no message (which announce nothing either), over a window of
// four of the 250 ms polls the indexer used to make. The window is a
// sleep, but one that cannot turn the test red on a slow machine: it
// only waits for rounds that must not come.
func TestIndexerIdleSendsNothing(t *testing.T) {
	url := pgtest.Schema(t)
	la := newWakeLog()
	a := openNode(t, url, la.tuning(never))
	if n := next(t, la.rounds, "first round"); n != 0 {
		t.Fatalf("the first round of an empty store indexed %d messages", n)
	}
	before := indexQueries(a.idx)
	b := openNode(t, url, indexTuning{backstop: never})

	u := parleytest.MustCreateUser(t, b, "idle")
	v := parleytest.MustCreateUser(t, a, "other")
	r := parleytest.MustCreateRoom(t, b, u, "quiet", 0)
	parleytest.MustJoin(t, a, r, v)
	time.Sleep(time.Second)

	select {
	case n := <-la.rounds:
		t.Errorf("an idle indexer ran a round (%d messages indexed)", n)
	default:
	}
	select {
	case <-la.heard:
		t.Error("writes that store no message were announced")
	default:
	}
	if after := indexQueries(a.idx); after["index"] != before["index"] || after["behind"] != before["behind"] || after["notify"] != 0 {
		t.Errorf("the idle indexer's statements went from %v to %v", before, after)
	}
	if q := indexQueries(b.idx); q["notify"] != 0 {
		t.Errorf("node b announced %v times with no message sent", q["notify"])
	}
}

// TestIndexerWokenByAnotherNode: a message sent on another node, whose own
// indexer is held, is indexed by this node's indexer, whose backstop is an
// hour: only the other node's announcement can have woken it. The search
// on this node finds it.
func TestIndexerWokenByAnotherNode(t *testing.T) {
	url := pgtest.Schema(t)
	la := newWakeLog()
	a := openNode(t, url, la.tuning(never))
	next(t, la.rounds, "first round")
	b := heldNode(t, url, indexTuning{backstop: never})

	u := parleytest.MustCreateUser(t, b, "sender")
	r := parleytest.MustCreateRoom(t, b, u, "woken", 0)
	m := parleytest.MustSend(t, b, r, u, "wakeword from node b")
	if n := la.indexing(t); n != 1 {
		t.Errorf("node a's round indexed %d messages, want the 1 of node b", n)
	}
	if own := next(t, la.heard, "announcement"); own {
		t.Error("node a heard its own announcement, want node b's")
	}
	found, err := a.SearchRoom(context.Background(), r.ID, parleytest.MustQuery(t, "wakeword"), 0, 10)
	if err != nil || len(found) != 1 || found[0].Seq != m.Seq {
		t.Errorf("SearchRoom(wakeword) on node a = %v, %v; want seq %d", found, err, m.Seq)
	}
}

// TestIndexerBackstopFindsUnannounced: a message whose announcement never
// went out (the sender quiet, its indexer held) is indexed by the other
// node's backstop round.
func TestIndexerBackstopFindsUnannounced(t *testing.T) {
	url := pgtest.Schema(t)
	la := newWakeLog()
	a := openNode(t, url, la.tuning(50*time.Millisecond))
	b := heldNode(t, url, indexTuning{backstop: never, quiet: true})
	u := parleytest.MustCreateUser(t, b, "quiet")
	r := parleytest.MustCreateRoom(t, b, u, "unannounced", 0)
	m := parleytest.MustSend(t, b, r, u, "lostword")
	if n := la.indexing(t); n != 1 {
		t.Errorf("node a's backstop round indexed %d messages, want 1", n)
	}
	select {
	case <-la.heard:
		t.Error("node a heard an announcement of a quiet node")
	default:
	}
	found, err := a.SearchRoom(context.Background(), r.ID, parleytest.MustQuery(t, "lostword"), 0, 10)
	if err != nil || len(found) != 1 || found[0].Seq != m.Seq {
		t.Errorf("SearchRoom(lostword) on node a = %v, %v; want seq %d", found, err, m.Seq)
	}
}

// TestIndexerListensAgain: when its LISTEN connection is cut, the
// listener connects again, wakes the indexer for what it may have missed,
// and hears the other nodes' sends again.
func TestIndexerListensAgain(t *testing.T) {
	url := pgtest.Schema(t)
	la := newWakeLog()
	a := openNode(t, url, la.tuning(never))
	pid := next(t, la.listened, "LISTEN")
	next(t, la.rounds, "first round")
	b := heldNode(t, url, indexTuning{backstop: never})

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
	if n := la.indexing(t); n != 1 {
		t.Errorf("node a's round indexed %d messages, want the 1 of node b", n)
	}
}
