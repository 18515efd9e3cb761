package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/servicetest"
	"parley/stomp"
)

// The freezes of issue 27 (defect 3): a service's processes are
// SIGSTOPped under load (servicetest's Freeze) and SIGCONTed after
// freezeHold (Thaw). Its sockets stay open and nothing answers, as with a
// hung or swapping server or a network black hole. Redis holds caches and presence only, so while it
// hangs sends must go on committing and reaching subscribers; RabbitMQ's
// gaps are filled from the store; a frozen PostgreSQL, the store of
// record, is refused as unavailable within a couple of seconds.

// freezeHold is how long each service stays frozen: long enough to be
// told from a slow call (every timeout of the path is shorter), short
// enough for CI.
const freezeHold = 8 * time.Second

// freezeDetect is the time a node may take to notice a hung Redis and
// stop waiting for it: what the issue allows ("a second or two").
const freezeDetect = 2 * time.Second

// pgDetect is the time a node may take to notice a hung PostgreSQL: its
// liveness probe's two unanswered pings of 1 s, and the pause before.
const pgDetect = 3 * time.Second

// loggedAt is the time of the first line of n's log with every one of
// words (slog's time=…), and whether there is one.
func loggedAt(n *node, words ...string) (time.Time, bool) {
	for _, l := range n.logLines(words...) {
		f := strings.Fields(l)
		if len(f) > 0 && strings.HasPrefix(f[0], "time=") {
			if at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(f[0], "time=")); err == nil {
				return at, true
			}
		}
	}
	return time.Time{}, false
}

// detected is how long after down each node logged the line with words,
// as "a 1.2s, b 1.3s" ("never" for a node that did not).
func detected(down time.Time, words string, nodes ...*node) string {
	var parts []string
	for _, n := range nodes {
		d := "never"
		if at, ok := loggedAt(n, words); ok {
			d = ms(at.Sub(down))
		}
		parts = append(parts, n.name+" "+d)
	}
	return strings.Join(parts, ", ")
}

// TestChaosFreeze runs the three freezes in turn.
func TestChaosFreeze(t *testing.T) {
	needChaos(t)
	cases := []struct {
		name string
		run  func(*testing.T)
	}{
		{"redis", testFreezeRedis},
		{"rabbitmq", testFreezeRabbitMQ},
		{"postgres", testFreezePostgres},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			c.run(t)
			t.Logf("case freeze/%s took %v", c.name, time.Since(start).Round(100*time.Millisecond))
		})
	}
}

// freezeLoad is the load of the freezes: two senders and two subscribers
// on each of two nodes, the senders at rate messages/s each. It returns
// the room's owner too, who sends nothing.
func freezeLoad(t *testing.T, e *env, rate float64) (*stream, *node, *node, string, user) {
	t.Helper()
	a, b := e.node("a"), e.node("b")
	owner := mustUser(t, a.Addr(), "owner")
	sa, sb, reader := mustUser(t, a.Addr(), "sa"), mustUser(t, a.Addr(), "sb"), mustUser(t, a.Addr(), "reader")
	room := mustRoom(t, a.Addr(), owner, sa, sb, reader)
	st := newStream(t)
	for i := range 2 {
		st.addSender(fmt.Sprintf("a%d", i), sa, room, rate, 0, a)
		st.addSender(fmt.Sprintf("b%d", i), sb, room, rate, 0, b)
	}
	st.addSubscribers("on-a-", 2, reader, room, a)
	st.addSubscribers("on-b-", 2, reader, room, b)
	st.start()
	st.waitReceipts(int(8*rate), 30*time.Second) // 2 s of load
	return st, a, b, room, owner
}

// sendLatencies is the time from first try to receipt of the messages
// first tried in [from, to), sorted.
func sendLatencies(l *ledger, from, to time.Time) []time.Duration {
	var out []time.Duration
	for _, r := range l.snapshot() {
		if !r.receipt.IsZero() && !r.first.Before(from) && r.first.Before(to) {
			out = append(out, r.receipt.Sub(r.first))
		}
	}
	slices.Sort(out)
	return out
}

// receiptGap is the longest time in [from, to] with no receipt at all.
func receiptGap(l *ledger, from, to time.Time) time.Duration {
	var at []time.Time
	for _, r := range l.snapshot() {
		if !r.receipt.IsZero() && r.receipt.After(from) && r.receipt.Before(to) {
			at = append(at, r.receipt)
		}
	}
	return longestGap(at, from, to)
}

// silence is the longest time in [from, to] in which one subscriber read
// nothing, and whose it was.
func silence(subs []*subscriber, from, to time.Time) (time.Duration, string) {
	var worst time.Duration
	var who string
	for _, s := range subs {
		var at []time.Time
		for _, d := range s.deliveries() {
			if d.at.After(from) && d.at.Before(to) {
				at = append(at, d.at)
			}
		}
		if g := longestGap(at, from, to); g > worst {
			worst, who = g, s.name
		}
	}
	return worst, who
}

// longestGap is the longest interval of [from, to] with none of times.
func longestGap(times []time.Time, from, to time.Time) time.Duration {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	prev, worst := from, time.Duration(0)
	for _, t := range append(times, to) {
		worst = max(worst, t.Sub(prev))
		prev = t
	}
	return worst
}

// p99 is the 99th percentile of sorted, or 0 for none.
func p99(sorted []time.Duration) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return quantile(sorted, 0.99)
}

// recoverBound is how long after a thaw delivery must be whole and live
// again.
const recoverBound = 5 * time.Second

// receiptedAfter reports whether a message first tried after at has its
// receipt.
func receiptedAfter(l *ledger, at time.Time) bool {
	for _, r := range l.snapshot() {
		if !r.receipt.IsZero() && r.first.After(at) {
			return true
		}
	}
	return false
}

// finishFreeze waits for the load to go on after the thaw, stops it and
// checks that nothing was lost, duplicated or delivered out of order; it
// returns the recovery figure of recoveryCheck.
func finishFreeze(t *testing.T, e *env, st *stream, room string, fault, heal time.Time, nodes ...*node) (string, storeVerdict, int) {
	t.Helper()
	for _, n := range nodes {
		if n.Addr() == "" {
			t.Fatalf("node %s died during the freeze (%v):\n%s", n.name, n.wait(), servicetest.LastLines(readFile(n.log), 15))
		}
	}
	// Until a message first tried after heal+recoverBound+1s is
	// receipted: the sends recoveryCheck measures.
	deadline := time.Now().Add(60 * time.Second)
	for !receiptedAfter(st.l, heal.Add(recoverBound+time.Second)) {
		if time.Now().After(deadline) {
			t.Fatalf("no send tried %v after the thaw was receipted within 60 s (refusals: %s)", recoverBound+time.Second, st.l.refusalSummary())
		}
		time.Sleep(20 * time.Millisecond)
	}
	n, behind := st.finish(10 * time.Second)
	if len(behind) > 0 {
		t.Errorf("10 s after the last receipt (seq %d) subscribers were behind: %s", n, strings.Join(behind, ", "))
	}
	rec := recoveryCheck(t, "thawed", st, fault, heal, recoverBound, 2*time.Second)
	v := checkStore(pgRows(t, e.store, room), st.l.snapshot())
	assertStore(t, v)
	return rec, v, assertSubscribers(t, st.subs, n)
}

// testFreezeRedis: the private Redis is SIGSTOPped for freezeHold under
// load on two nodes. Once the nodes have noticed (freezeDetect), sends
// go on being receipted and delivered, about as fast as before.
func testFreezeRedis(t *testing.T) {
	e := newEnv(t, false, false)
	st, a, b, room, _ := freezeLoad(t, e, 50)
	settled := time.Now()
	time.Sleep(2 * time.Second) // the latencies before the freeze

	e.redis.Freeze()
	down := time.Now()
	time.Sleep(freezeHold) // the freeze itself
	e.redis.Thaw()
	back := time.Now()

	before := sendLatencies(st.l, settled, down)
	during := sendLatencies(st.l, down.Add(freezeDetect), back)
	gap := receiptGap(st.l, down, back)
	quiet, who := silence(st.subs, down, back)
	ratio := 0.0
	if p := p99(before); p > 0 {
		ratio = float64(p99(during)) / float64(p)
	}
	t.Logf("Redis frozen %v: %d receipts during it (%d from %v on); send p99 before %v, during (from %v) %v: %.1f×; longest time with no receipt %v; longest subscriber silence %v (%s)",
		ms(back.Sub(down)), len(sendLatencies(st.l, down, back)), len(during), freezeDetect, ms(p99(before)), freezeDetect, ms(p99(during)), ratio, ms(gap), ms(quiet), who)
	hung := detected(down, "redis is not answering", a, b)
	errs, warns := len(a.logLines("level=ERROR"))+len(b.logLines("level=ERROR")), len(a.logLines("level=WARN"))+len(b.logLines("level=WARN"))
	t.Logf("Redis frozen: the nodes marked it down %s after the freeze; %d ERROR and %d WARN log lines on the two nodes", hung, errs, warns)
	if errs > 20 {
		t.Errorf("%d ERROR log lines on two nodes for one freeze; want it logged once, and its end", errs)
	}
	// The bounds are loose (the machine is shared); the 2× is
	// reported above.
	if len(during) == 0 {
		t.Errorf("no send first tried %v after Redis froze was receipted while it was frozen", freezeDetect)
	}
	if gap > freezeDetect+time.Second {
		t.Errorf("no receipt for %v while Redis was frozen, want sends receipted again within %v", ms(gap), freezeDetect)
	}
	if quiet > freezeDetect+2*time.Second {
		t.Errorf("subscriber %s read nothing for %v while Redis was frozen, want under %v", who, ms(quiet), freezeDetect+2*time.Second)
	}
	if p := p99(during); p > 2*time.Second {
		t.Errorf("send p99 while Redis was frozen (after %v) %v, want far below the send timeout (before: %v)", freezeDetect, ms(p), ms(p99(before)))
	}
	rec, v, bad := finishFreeze(t, e, st, room, down, back, a, b)
	report(t, result{name: fmt.Sprintf("9a Redis frozen (SIGSTOP) %v, senders on 2 nodes", freezeHold), v: v, subs: len(st.subs), subFaults: bad,
		recovery: rec + " after thaw",
		notes: fmt.Sprintf("detected: %s; send p99 %s before, %s frozen (%.1f×); no receipt for %s at most, subscriber silence %s; refusals: %s",
			hung, ms(p99(before)), ms(p99(during)), ratio, ms(gap), ms(quiet), st.l.refusalSummary())})
}

// testFreezeRabbitMQ: the private RabbitMQ is SIGSTOPped for freezeHold
// under load on two nodes. Cross-node delivery goes on from the store
// (the relay fills its gaps), so no subscriber is silent for long.
func testFreezeRabbitMQ(t *testing.T) {
	e := newEnv(t, true, false)
	st, a, b, room, _ := freezeLoad(t, e, 50)
	pids := e.rabbit.PIDs()
	e.rabbit.Freeze()
	down := time.Now()
	time.Sleep(freezeHold)
	e.rabbit.Thaw()
	back := time.Now()
	gap := receiptGap(st.l, down, back)
	quiet, who := silence(st.subs, down, back)
	t.Logf("RabbitMQ (%d processes) frozen %v: longest time with no receipt %v; longest subscriber silence %v (%s)",
		len(pids), ms(back.Sub(down)), ms(gap), ms(quiet), who)
	if gap > freezeDetect {
		t.Errorf("no receipt for %v while RabbitMQ was frozen: sends do not wait for the broker", ms(gap))
	}
	if quiet > freezeDetect+2*time.Second {
		t.Errorf("subscriber %s read nothing for %v while RabbitMQ was frozen, want under %v", who, ms(quiet), freezeDetect+2*time.Second)
	}
	rec, v, bad := finishFreeze(t, e, st, room, down, back, a, b)
	report(t, result{name: fmt.Sprintf("9b RabbitMQ frozen (SIGSTOP) %v, senders on 2 nodes", freezeHold), v: v, subs: len(st.subs), subFaults: bad,
		recovery: rec + " after thaw",
		notes:    fmt.Sprintf("no receipt for %s at most, subscriber silence %s; refusals: %s", ms(gap), ms(quiet), st.l.refusalSummary())})
}

// attempt is one send of the refusal probe: when it was written, how
// long its answer took, and the answer's code ("" for a RECEIPT).
type attempt struct {
	at   time.Time
	took time.Duration
	code string
}

// sendProbe sends one message at a time to a room, every 400 ms, each
// on a session of its own opened beforehand (a CONNECT needs the store,
// and a send that waited long is not kept waiting behind another),
// recording each answer.
type sendProbe struct {
	room  string
	l     *ledger
	conns []*stompConn
	wg    sync.WaitGroup

	mu  sync.Mutex // guards out
	out []attempt
}

// newSendProbe opens n sessions of u on node.
func newSendProbe(t *testing.T, node *node, u user, room string, l *ledger, n int) *sendProbe {
	t.Helper()
	p := &sendProbe{room: room, l: l}
	for range n {
		c, err := dialStomp(node.Addr(), u.token)
		if err != nil {
			t.Fatalf("probe session: %v", err)
		}
		t.Cleanup(c.close)
		p.conns = append(p.conns, c)
	}
	return p
}

// run sends until stop closes or the sessions are used up.
func (p *sendProbe) run(stop <-chan struct{}) {
	p.wg.Go(func() {
		for i, c := range p.conns {
			select {
			case <-stop:
				return
			case <-time.After(400 * time.Millisecond):
			}
			p.wg.Go(func() { p.send(c, fmt.Sprintf("probe-%d", i)) })
		}
	})
}

func (p *sendProbe) send(c *stompConn, cid string) {
	r := p.l.add("probe", cid)
	if c.write(sendFrame(p.room, cid, sendBody(cid, r.first, ""))) != nil {
		return
	}
	f, err := c.next(20 * time.Second)
	a := attempt{at: r.first, took: time.Since(r.first)}
	switch {
	case err != nil:
		a.code = "no answer"
	case f.Command == stomp.Error:
		a.code = string(f.Get("code"))
	case f.Command == stomp.Receipt:
		seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
		p.l.receipted(r, seq)
	default:
		a.code = "unexpected " + string(f.Command)
	}
	p.mu.Lock()
	p.out = append(p.out, a)
	p.mu.Unlock()
}

// attempts waits for the sends in flight and returns every answer.
func (p *sendProbe) attempts() []attempt {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.out)
}

// testFreezePostgres: the private PostgreSQL is SIGSTOPped for freezeHold
// under load on two nodes. A send begun once the store is known to hang
// is refused as unavailable within a couple of seconds, not after the
// send timeout; after the thaw everything heals by itself.
func testFreezePostgres(t *testing.T) {
	e := newEnv(t, false, true)
	st, a, b, room, owner := freezeLoad(t, e, 20)
	pids := e.pg.PIDs()
	probe := newSendProbe(t, a, owner, room, st.l, int((freezeHold+time.Second)/(400*time.Millisecond)))
	stop := make(chan struct{})
	probe.run(stop)
	time.Sleep(time.Second) // a few probes before
	e.pg.Freeze()
	down := time.Now()
	time.Sleep(freezeHold)
	close(stop)
	e.pg.Thaw()
	back := time.Now()

	// A send begun once the freeze is detected must be refused as
	// unavailable within refuseBound, and before the thaw.
	const refuseBound = 5 * time.Second
	var refused []time.Duration
	var wrong []string
	for _, at := range probe.attempts() {
		if at.at.Before(down.Add(pgDetect)) || !at.at.Before(back) {
			continue
		}
		by := at.at.Add(refuseBound)
		if by.After(back) {
			by = back
		}
		if at.code != "unavailable" || at.at.Add(at.took).After(by) {
			wrong = append(wrong, fmt.Sprintf("%q after %v", at.code, ms(at.took)))
			continue
		}
		refused = append(refused, at.took)
	}
	slices.Sort(refused)
	worst := time.Duration(0)
	if len(refused) > 0 {
		worst = refused[len(refused)-1]
	}
	t.Logf("PostgreSQL frozen: the nodes logged the store unreachable %s after the freeze", detected(down, "store unreachable", a, b))
	t.Logf("PostgreSQL (%d processes) frozen %v: of the sends begun from %v on, %d refused as unavailable while frozen (p50 %v, max %v), %d not: %s",
		len(pids), ms(back.Sub(down)), pgDetect, len(refused), ms(quantile(refused, 0.5)), ms(worst), len(wrong), strings.Join(wrong[:min(len(wrong), 5)], ", "))
	if len(wrong) > 0 || len(refused) == 0 {
		t.Errorf("sends begun %v after PostgreSQL froze: %d refused as unavailable within %v (and before the thaw), %d not",
			pgDetect, len(refused), refuseBound, len(wrong))
	}
	rec, v, bad := finishFreeze(t, e, st, room, down, back, a, b)
	report(t, result{name: fmt.Sprintf("9c PostgreSQL frozen (SIGSTOP) %v, senders on 2 nodes", freezeHold), v: v, subs: len(st.subs), subFaults: bad,
		recovery: rec + " after thaw",
		notes: fmt.Sprintf("detected: %s; sends refused while frozen (from %s on) in %s p50, %s max; refusals: %s",
			detected(down, "store unreachable", a, b), pgDetect, ms(quantile(refused, 0.5)), ms(worst), st.l.refusalSummary())})
}
