package chaos

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// recoveryCheck logs and checks how long after heal delivery was whole
// and live again: the later of when every subscriber had every message
// receipted by heal, and when the last message that reached a subscriber
// more than a second after its receipt arrived (a stalled relay). It must
// be within bound; and messages sent from heal+bound on must reach every
// subscriber within slowBound.
func recoveryCheck(t *testing.T, what string, st *stream, fault, heal time.Time, bound, slowBound time.Duration) string {
	t.Helper()
	rec, who, ok := recovery(st.subs, st.l, heal)
	lateAt, lateN := lateUntil(st.subs, st.l, heal, time.Second)
	if !lateAt.IsZero() && lateAt.Sub(heal) > rec {
		rec = lateAt.Sub(heal)
	}
	var out string
	switch {
	case !ok:
		t.Errorf("%s: subscriber %s never read seq %d, receipted by then", what, who, st.l.maxSeqAt(heal))
		out = "never"
	case rec > bound:
		t.Errorf("%s: delivery was whole and live again only %v later (%d deliveries over 1 s late, the last at %v), want within %v",
			what, ms(rec), lateN, ms(lateAt.Sub(heal)), bound)
		out = ms(rec)
	default:
		out = ms(rec)
	}
	t.Logf("%s: recovery %s (max seq then %d; %d deliveries more than 1 s after their receipt; %s)",
		what, out, st.l.maxSeqAt(heal), lateN, gapSummary(st.subs))
	var gaps []string
	for _, s := range st.subs {
		s.mu.Lock()
		for _, g := range s.gaps {
			gaps = append(gaps, fmt.Sprintf("%s read seq %d after %d at %+v", s.name, g.seq, g.after, ms(g.at.Sub(heal))))
		}
		s.mu.Unlock()
	}
	if len(gaps) > 0 {
		t.Logf("%s: gaps (times from it): %s", what, strings.Join(gaps[:min(len(gaps), 6)], "; "))
	}
	lat := latencies(st.subs, heal.Add(bound))
	before := latenciesBetween(st.subs, st.started, fault)
	if len(lat) > 0 {
		p99, max := quantile(lat, 0.99), lat[len(lat)-1]
		t.Logf("%s: delivery latency of messages sent from %v after it: p50 %v p99 %v max %v (before the fault: p50 %v p99 %v)",
			what, bound, ms(quantile(lat, 0.5)), ms(p99), ms(max), ms(quantile(before, 0.5)), ms(quantile(before, 0.99)))
		if max > slowBound {
			t.Errorf("%s: a subscriber was still slowed after recovery: a message sent %v after it took %v to arrive, want under %v",
				what, bound, ms(max), slowBound)
		}
	} else {
		t.Errorf("%s: no message sent %v after it was read: the run is too short to tell", what, bound)
	}
	return out
}

// testRabbitMQStop is case 2: the private RabbitMQ is stopped for 5 s
// under load, with senders on both of two nodes. Cross-node delivery is
// back within 5 s of the broker, and no subscriber is slowed after.
func testRabbitMQStop(t *testing.T) {
	e := newEnv(t, true, false)
	a, b := e.node("a"), e.node("b")
	owner := mustUser(t, a.Addr(), "owner")
	sa, sb, reader := mustUser(t, a.Addr(), "sa"), mustUser(t, a.Addr(), "sb"), mustUser(t, a.Addr(), "reader")
	room := mustRoom(t, a.Addr(), owner, sa, sb, reader)

	st := newStream(t)
	for i := range 2 {
		st.addSender(fmt.Sprintf("a%d", i), sa, room, 50, 0, a)
		st.addSender(fmt.Sprintf("b%d", i), sb, room, 50, 0, b)
	}
	st.addSubscribers("on-a-", 3, reader, room, a)
	st.addSubscribers("on-b-", 3, reader, room, b)
	st.start()
	st.waitReceipts(400, 30*time.Second)

	down := time.Now()
	e.rabbit.Stop()
	stopped := time.Now()
	time.Sleep(5 * time.Second) // the outage itself
	e.rabbit.Start()
	back := time.Now()
	t.Logf("RabbitMQ stopped in %v, back (booted) %v after the stop began", ms(stopped.Sub(down)), ms(back.Sub(down)))
	_, n0 := st.l.maxSeq()
	st.waitReceipts(n0+2000, 60*time.Second) // 10 s more at 200 msg/s

	n, behind := st.finish(10 * time.Second)
	if len(behind) > 0 {
		t.Errorf("10 s after the last receipt (seq %d) subscribers were behind: %s", n, strings.Join(behind, ", "))
	}
	rec := recoveryCheck(t, "RabbitMQ back", st, down, back, 5*time.Second, 2*time.Second)
	v := checkStore(pgRows(t, e.store, room), st.l.snapshot())
	assertStore(t, v)
	bad := assertSubscribers(t, st.subs, n)
	report(t, result{name: "2 RabbitMQ stopped 5 s, senders on 2 nodes", v: v, subs: len(st.subs), subFaults: bad,
		recovery: rec + " after broker back", notes: gapSummary(st.subs) + "; refusals: " + st.l.refusalSummary()})
}

// testNodeDeath is case 3: one of three nodes is SIGKILLed with a sender
// and subscribers on it; they resume on another node with nothing lost.
func testNodeDeath(t *testing.T) {
	e := newEnv(t, false, false)
	a, b, c := e.node("a"), e.node("b"), e.node("c")
	owner := mustUser(t, a.Addr(), "owner")
	reader := mustUser(t, a.Addr(), "reader")
	us := []user{mustUser(t, a.Addr(), "sa"), mustUser(t, a.Addr(), "sb"), mustUser(t, a.Addr(), "sc")}
	room := mustRoom(t, a.Addr(), owner, append(us, reader)...)

	st := newStream(t)
	st.addSender("a", us[0], room, 20, 0, a)
	st.addSender("b", us[1], room, 20, 0, b)
	victim := st.addSender("c", us[2], room, 20, 0, c, a)
	st.addSubscribers("on-a-", 2, reader, room, a)
	st.addSubscribers("on-b-", 2, reader, room, b)
	onC := st.addSubscribers("on-c-", 3, reader, room, c, b)
	st.start()
	st.waitReceipts(150, 30*time.Second)

	sentBefore := victim.sent.Load()
	c.signal(syscall.SIGKILL)
	killed := time.Now()
	c.wait()
	// The victim sender resumes on a.
	deadline := killed.Add(20 * time.Second)
	for victim.sent.Load() <= sentBefore+5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	senderBack := time.Since(killed)
	if victim.sent.Load() <= sentBefore+5 {
		t.Errorf("the sender of the dead node had %d receipts 20 s later, %d before", victim.sent.Load(), sentBefore)
	}
	_, n0 := st.l.maxSeq()
	st.waitReceipts(n0+200, 60*time.Second)

	n, behind := st.finish(10 * time.Second)
	if len(behind) > 0 {
		t.Errorf("10 s after the last receipt (seq %d) subscribers were behind: %s", n, strings.Join(behind, ", "))
	}
	rec, who, ok := recovery(onC, st.l, killed)
	if !ok || rec > 10*time.Second {
		t.Errorf("the dead node's subscribers had every message receipted before the kill %v later (%s, reached %v), want within 10 s", ms(rec), who, ok)
	}
	for _, s := range onC {
		s.mu.Lock()
		if s.resumes == 0 {
			t.Errorf("subscriber %s never resumed", s.name)
		}
		s.mu.Unlock()
	}
	resumed, ok := resumedAfter(onC, killed)
	if !ok {
		t.Errorf("a subscriber of the dead node read nothing after the kill")
	}
	t.Logf("after SIGKILL: the sender resumed (5 receipts) in %v; the subscribers had every message receipted before the kill %v after it, and read again (resumed) %v after it",
		ms(senderBack), ms(rec), ms(resumed))
	others := st.subs[:4]
	if lat := latencies(others, killed); len(lat) > 0 {
		t.Logf("subscribers of the live nodes after the kill: p99 %v max %v", ms(quantile(lat, 0.99)), ms(lat[len(lat)-1]))
	}
	v := checkStore(pgRows(t, e.store, room), st.l.snapshot())
	assertStore(t, v)
	bad := assertSubscribers(t, st.subs, n)
	report(t, result{name: "3 one of 3 nodes SIGKILLed with clients on it", v: v, subs: len(st.subs), subFaults: bad,
		recovery: fmt.Sprintf("subscribers resumed %s, sender %s after the kill", ms(resumed), ms(senderBack)), notes: "refusals: " + st.l.refusalSummary()})
}

// testRedisRestart is case 4: the private Redis is SIGKILLed and
// restarted empty, with senders on both nodes; then again with a quiet
// room that gets 10 messages once Redis is back. Every subscriber has
// every receipted message within 10 s of Redis being back.
func testRedisRestart(t *testing.T) {
	e := newEnv(t, false, false)
	a, b := e.node("a"), e.node("b")
	owner := mustUser(t, a.Addr(), "owner")
	sa, sb, reader := mustUser(t, a.Addr(), "sa"), mustUser(t, a.Addr(), "sb"), mustUser(t, a.Addr(), "reader")
	late := mustUser(t, a.Addr(), "late")
	room := mustRoom(t, a.Addr(), owner, sa, sb, reader, late)
	quiet := mustRoom(t, a.Addr(), owner, sa, reader)

	// Phase 1: under load.
	st := newStream(t)
	for i := range 2 {
		st.addSender(fmt.Sprintf("a%d", i), sa, room, 50, 0, a, b)
		st.addSender(fmt.Sprintf("b%d", i), sb, room, 50, 0, b, a)
	}
	st.addSubscribers("on-a-", 3, reader, room, a, b)
	st.addSubscribers("on-b-", 3, reader, room, b, a)
	// The quiet room's subscribers listen from the start.
	qt := newStream(t)
	qt.addSubscribers("quiet-on-a-", 2, reader, quiet, a)
	qt.addSubscribers("quiet-on-b-", 2, reader, quiet, b)
	qt.start()
	st.start()
	st.waitReceipts(200, 30*time.Second)

	probeStop := make(chan struct{})
	probe := probeReady(b, probeStop)
	e.redis.Kill()
	killed := time.Now()
	time.Sleep(1350 * time.Millisecond) // the outage of the issue
	e.redis.Start()
	back := time.Now()
	close(probeStop)
	<-probe.done
	first503, readyBody := probe.check(t, "redis", killed, back, killed)
	t.Logf("/readyz of b while Redis was down: first 503 %v after the kill (%s)", since(first503), readyBody)
	// A member opens a session on a as Redis comes back: an ordinary
	// presence change, which makes the relays rebuild their routes.
	if c, err := dialStomp(a.Addr(), late.token); err != nil {
		t.Errorf("a session opened after Redis came back: %v", err)
	} else {
		defer c.close()
	}
	_, n0 := st.l.maxSeq()
	st.waitReceipts(n0+3000, 60*time.Second) // 15 s more at 200 msg/s
	n, behind := st.finish(10 * time.Second)
	if len(behind) > 0 {
		t.Errorf("10 s after the last receipt (seq %d) subscribers were behind: %s", n, strings.Join(behind, ", "))
	}
	t.Logf("Redis down %v", ms(back.Sub(killed)))
	rec := recoveryCheck(t, "Redis back", st, killed, back, 10*time.Second, 2*time.Second)
	v := checkStore(pgRows(t, e.store, room), st.l.snapshot())
	assertStore(t, v)
	bad := assertSubscribers(t, st.subs, n)
	report(t, result{name: "4a Redis SIGKILLed, restarted empty after 1.35 s, senders on 2 nodes", v: v, subs: len(st.subs), subFaults: bad,
		recovery: rec + " after Redis back", notes: gapSummary(st.subs) + "; refusals: " + st.l.refusalSummary()})

	// Phase 2: a quiet room. Redis restarts empty, then a gets 10
	// messages for it and nothing follows them.
	e.redis.Kill()
	killed = time.Now()
	time.Sleep(1350 * time.Millisecond)
	e.redis.Start()
	back = time.Now()
	qs := qt.addSender("quiet", sa, quiet, 50, 0, a)
	qs.limit = 10
	startSenders(qt)
	qt.sendersWG.Wait()
	qn, _ := qt.l.maxSeq()
	if qn != 10 {
		t.Errorf("quiet room: %d messages receipted, want 10 (refusals: %s)", qn, qt.l.refusalSummary())
	}
	behind = waitSeq(qt.subs, qn, time.Until(back.Add(10*time.Second)))
	if len(behind) > 0 {
		t.Errorf("quiet room: 10 s after Redis was back, subscribers were behind seq %d: %s", qn, strings.Join(behind, ", "))
	}
	qrec := "never"
	if at, all := lastReach(qt.subs, qn); all {
		qrec = ms(at.Sub(back))
	}
	qt.subCancel()
	qt.subsWG.Wait()
	qv := checkStore(pgRows(t, e.store, quiet), qt.l.snapshot())
	assertStore(t, qv)
	qbad := assertSubscribers(t, qt.subs, qn)
	t.Logf("quiet room: Redis down %v; every subscriber had the %d messages %s after Redis was back", ms(back.Sub(killed)), qn, qrec)
	report(t, result{name: "4b Redis restarted empty, then 10 messages in a quiet room", v: qv, subs: len(qt.subs), subFaults: qbad,
		recovery: qrec + " after Redis back", notes: gapSummary(qt.subs) + "; refusals: " + qt.l.refusalSummary()})
}

// startSenders starts a stream's senders after its subscribers.
func startSenders(s *stream) {
	if s.abort != nil {
		s.abort()
	}
	abortCtx, abort := context.WithCancel(context.Background())
	s.abort = abort
	for _, snd := range s.senders {
		snd.abort = abortCtx
		s.sendersWG.Go(snd.run)
	}
}

// lastReach is the latest time a subscriber first read seq, and whether
// all have.
func lastReach(subs []*subscriber, seq int64) (time.Time, bool) {
	var last time.Time
	for _, s := range subs {
		at, ok := s.reachedAt(seq)
		if !ok {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last, true
}

// testNodeDeathWhileBrokerDown is case 5 (defect 2b): RabbitMQ is
// stopped, a node commits 10 receipted messages and is SIGKILLed, the
// broker comes back: the other node's subscribers get every message
// within 10 s of the broker's return.
func testNodeDeathWhileBrokerDown(t *testing.T) {
	e := newEnv(t, true, false)
	a, b := e.node("a"), e.node("b")
	owner := mustUser(t, a.Addr(), "owner")
	sa, reader := mustUser(t, a.Addr(), "sa"), mustUser(t, a.Addr(), "reader")
	room := mustRoom(t, a.Addr(), owner, sa, reader)

	st := newStream(t)
	onB := st.addSubscribers("on-b-", 3, reader, room, b)
	onA := st.addSubscribers("on-a-", 2, reader, room, a, b)
	st.start()
	// One message that every subscriber reads before the fault.
	st.addSender("first", sa, room, 50, 0, a).limit = 1
	startSenders(st)
	st.sendersWG.Wait()
	if behind := waitSeq(st.subs, 1, 10*time.Second); len(behind) > 0 {
		t.Fatalf("before the fault: %s", strings.Join(behind, ", "))
	}

	e.rabbit.Stop()
	st.senders = nil
	st.addSender("ten", sa, room, 50, 0, a).limit = 10
	startSenders(st)
	st.sendersWG.Wait()
	if _, got := st.l.maxSeq(); got != 11 {
		t.Fatalf("%d receipts with RabbitMQ down, want 1+10 (refusals: %s)", got, st.l.refusalSummary())
	}
	a.signal(syscall.SIGKILL)
	a.wait()
	e.rabbit.Start()
	back := time.Now()
	n, _ := st.l.maxSeq()
	behind := waitSeq(onB, n, 10*time.Second)
	if len(behind) > 0 {
		t.Errorf("10 s after RabbitMQ was back, node b's subscribers were behind seq %d: %s", n, strings.Join(behind, ", "))
	}
	rec := "never"
	if at, ok := lastReach(onB, n); ok {
		rec = ms(at.Sub(back)) + " after broker back"
		if at.Before(back) {
			// Filled from the store without the broker.
			rec = ms(back.Sub(at)) + " before broker back"
		}
	}
	t.Logf("node b's subscribers had all %d messages %s", n, rec)
	behind = waitSeq(onA, n, 10*time.Second)
	if len(behind) > 0 {
		t.Errorf("the dead node's subscribers, resumed on b, were behind seq %d: %s", n, strings.Join(behind, ", "))
	}
	st.subCancel()
	st.subsWG.Wait()
	v := checkStore(pgRows(t, e.store, room), st.l.snapshot())
	assertStore(t, v)
	bad := assertSubscribers(t, st.subs, n)
	report(t, result{name: "5 node SIGKILLed while RabbitMQ is down (10 receipted on it)", v: v, subs: len(st.subs), subFaults: bad,
		recovery: rec, notes: gapSummary(st.subs) + "; refusals: " + st.l.refusalSummary()})
}
