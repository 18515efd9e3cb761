package chaos

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testSingleNodeSIGKILL is case 1 in small, over STOMP:
// cmd/parley's TestDurabilityAfterKill checks REST 201s against the
// store after a SIGKILL; this one checks RECEIPTs, and that subscribers
// resume on the restarted node with since-seq and read every seq once in
// order.
func testSingleNodeSIGKILL(t *testing.T) {
	n := startNode(t, "single", "--sync", "full", "--stomp-send-rate", "2000", "--rest-send-rate", "0")
	owner := mustUser(t, n.Addr(), "owner")
	s1, s2, reader := mustUser(t, n.Addr(), "s1"), mustUser(t, n.Addr(), "s2"), mustUser(t, n.Addr(), "reader")
	room := mustRoom(t, n.Addr(), owner, s1, s2, reader)

	st := newStream(t)
	st.addSender("s1", s1, room, 100, 0, n)
	st.addSender("s2", s2, room, 100, 0, n)
	st.addSubscribers("sub-", 3, reader, room, n)
	st.start()
	st.waitReceipts(500, 30*time.Second)

	n.signal(syscall.SIGKILL)
	killed := time.Now()
	n.wait()
	n.start()
	restarted := time.Since(killed)
	_, n0 := st.l.maxSeq()
	st.waitReceipts(n0+200, 30*time.Second)
	last, behind := st.finish(10 * time.Second)
	if len(behind) > 0 {
		t.Errorf("10 s after the last receipt (seq %d) subscribers were behind: %s", last, strings.Join(behind, ", "))
	}
	// Recovery: every subscriber reads again, on the restarted node.
	for _, s := range st.subs {
		s.mu.Lock()
		if s.resumes == 0 {
			t.Errorf("subscriber %s never resumed after the kill", s.name)
		}
		s.mu.Unlock()
	}
	rec, ok := resumedAfter(st.subs, killed)
	if !ok {
		t.Errorf("a subscriber read nothing after the kill")
	}
	t.Logf("SIGKILL with %d receipted; the node was serving again after %v; every subscriber read again %v after the kill",
		st.l.maxSeqAt(killed), ms(restarted), ms(rec))
	v := checkStore(restRows(t, n.Addr(), reader.token, room), st.l.snapshot())
	assertStore(t, v)
	bad := assertSubscribers(t, st.subs, last)
	report(t, result{name: "1 single node SIGKILL mid-stream (SQLite, STOMP)", v: v, subs: len(st.subs), subFaults: bad,
		recovery: fmt.Sprintf("%s after the kill (restart %s)", ms(rec), ms(restarted)), notes: fmt.Sprintf("%d stored without a receipt", v.unanswer)})
}

// readyProbe asks a node's /readyz every 100 ms with a 1 s deadline of
// its own, recording each answer, until stop closes.
type readyProbe struct {
	mu      sync.Mutex // guards answers
	answers []readyAnswer
	done    chan struct{}
}

type readyAnswer struct {
	at     time.Time
	took   time.Duration
	status int // 0: no answer within the deadline
	body   string
}

// check fails t unless every probe in flight between from and to (its
// 1 s included) was answered within
// its deadline and one was a 503 naming dep (a "dep: …" line that is not
// "dep: ok"). It returns the time of the first 503 after origin (-1 for
// none) and its body on one line.
func (p *readyProbe) check(t *testing.T, dep string, from, to, origin time.Time) (time.Duration, string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var first503 time.Duration = -1
	hung, during := 0, 0
	var named bool
	var body string
	for _, ans := range p.answers {
		if ans.at.After(to) || ans.at.Add(ans.took).Before(from) {
			continue
		}
		during++
		if ans.status == 0 {
			hung++
			continue
		}
		if ans.status == http.StatusServiceUnavailable {
			if first503 < 0 {
				first503 = ans.at.Sub(origin)
				body = strings.ReplaceAll(strings.TrimSpace(ans.body), "\n", " | ")
			}
			if strings.Contains(ans.body, dep+":") && !strings.Contains(ans.body, dep+": ok") {
				named = true
			}
		}
	}
	if hung > 0 {
		t.Errorf("/readyz gave no answer within 1 s to %d of %d probes while %s was down", hung, during, dep)
	}
	if first503 < 0 {
		t.Errorf("/readyz never answered 503 while %s was down (%d probes)", dep, during)
	} else if !named {
		t.Errorf("/readyz answered 503 without naming %s: %s", dep, body)
	}
	return first503, body
}

func probeReady(n *node, stop <-chan struct{}) *readyProbe {
	p := &readyProbe{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			start := time.Now()
			st, body, err := n.ready(time.Second)
			if err != nil {
				body = err.Error()
			}
			p.mu.Lock()
			p.answers = append(p.answers, readyAnswer{at: start, took: time.Since(start), status: st, body: body})
			p.mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return p
}

// testPostgresStop is case 6: the private PostgreSQL is stopped for 5 s
// under load on two nodes. No RECEIPT without a commit; every refusal is
// `unavailable`; /readyz answers 503 naming the store, each within its
// deadline; the service comes back by itself.
func testPostgresStop(t *testing.T) {
	e := newEnv(t, false, true)
	a, b := e.node("a"), e.node("b")
	owner := mustUser(t, a.Addr(), "owner")
	sa, sb, reader := mustUser(t, a.Addr(), "sa"), mustUser(t, a.Addr(), "sb"), mustUser(t, a.Addr(), "reader")
	room := mustRoom(t, a.Addr(), owner, sa, sb, reader)

	st := newStream(t)
	st.addSender("a", sa, room, 20, 0, a)
	st.addSender("b", sb, room, 20, 0, b)
	st.addSubscribers("on-a-", 2, reader, room, a)
	st.addSubscribers("on-b-", 2, reader, room, b)
	st.start()
	st.waitReceipts(100, 30*time.Second)

	probeStop := make(chan struct{})
	probe := probeReady(a, probeStop)
	linesBefore := len(a.logLines("level=ERROR")) + len(b.logLines("level=ERROR"))
	down := time.Now()
	e.pg.Stop()
	stopped := time.Now()
	time.Sleep(5 * time.Second) // the outage itself
	e.pg.Start()
	back := time.Now()
	// The service is back once a SEND is receipted again.
	_, atBack := st.l.maxSeq()
	st.waitReceipts(atBack+1, 30*time.Second)
	firstReceipt := time.Since(back)
	st.waitReceipts(atBack+600, 60*time.Second) // 15 s more at 40 msg/s
	// /readyz is 200 again by itself.
	deadline := time.Now().Add(10 * time.Second)
	var ready int
	for ready != http.StatusOK && time.Now().Before(deadline) {
		ready, _, _ = a.ready(time.Second)
		time.Sleep(50 * time.Millisecond)
	}
	close(probeStop)
	<-probe.done
	if ready != http.StatusOK {
		t.Errorf("/readyz of a answered %d 10 s after PostgreSQL was back, want 200", ready)
	}
	n, behind := st.finish(10 * time.Second)
	if len(behind) > 0 {
		t.Errorf("10 s after the last receipt (seq %d) subscribers were behind: %s", n, strings.Join(behind, ", "))
	}

	// Refusals: every SEND refused during the outage, and every CONNECT,
	// is `unavailable` (no answer at all is safe too: the sender sends
	// again with the same client-id).
	st.l.mu.Lock()
	var wrong []string
	for code, k := range st.l.refusals {
		if !safeRefusal(code) {
			wrong = append(wrong, fmt.Sprintf("%d refused with code %q (%s)", k, code, st.l.examples[code]))
		}
	}
	st.l.mu.Unlock()
	sort.Strings(wrong)
	if len(wrong) > 0 {
		t.Errorf("refusals during the PostgreSQL outage must be unavailable: %s", strings.Join(wrong, "; "))
	}

	first503, readyBody := probe.check(t, "store", stopped, back, down)
	linesAfter := len(a.logLines("level=ERROR")) + len(b.logLines("level=ERROR"))
	logged := linesAfter - linesBefore
	t.Logf("PostgreSQL stopped in %v, down %v; first 503 %v after the stop (%s); first receipt %v after it was back; %d ERROR log lines on the two nodes; refusals: %s",
		ms(stopped.Sub(down)), ms(back.Sub(stopped)), since(first503), readyBody, ms(firstReceipt), logged, st.l.refusalSummary())
	if logged > 20 {
		t.Errorf("%d ERROR log lines on two nodes for one outage; want the outage logged once, and its end", logged)
	}

	rec := recoveryCheck(t, "PostgreSQL back", st, down, back, 10*time.Second, 2*time.Second)
	v := checkStore(pgRows(t, e.store, room), st.l.snapshot())
	assertStore(t, v)
	bad := assertSubscribers(t, st.subs, n)
	report(t, result{name: "6 PostgreSQL stopped 5 s", v: v, subs: len(st.subs), subFaults: bad,
		recovery: fmt.Sprintf("first receipt %s after PG back, subscribers %s", ms(firstReceipt), rec),
		notes:    fmt.Sprintf("refusals: %s; first 503 %s; %d ERROR log lines", st.l.refusalSummary(), since(first503), logged)})
}

// safeRefusal reports whether a refusal (an ERROR code, or how a send or
// CONNECT failed) tells the client to send again with the same
// client-id: unavailable, or no answer at all (the connection was lost),
// or a node that took no connection.
func safeRefusal(code string) bool {
	switch code {
	case "unavailable", "no answer", "connect", "connect:unavailable":
		return true
	}
	return false
}

// testSIGTERM is case 8: node a gets SIGTERM under load. Every SEND is
// receipted, or refused `unavailable`, or unanswered, and is then safe to
// send again with the same client-id on node b: nothing is lost or
// stored twice, and a repeat of a receipted client-id gets its seq.
func testSIGTERM(t *testing.T) {
	e := newEnv(t, false, false)
	a, b := e.node("a"), e.node("b")
	owner := mustUser(t, a.Addr(), "owner")
	reader := mustUser(t, a.Addr(), "reader")
	var us []user
	for i := range 5 {
		us = append(us, mustUser(t, a.Addr(), fmt.Sprintf("s%d", i)))
	}
	room := mustRoom(t, a.Addr(), owner, append(us, reader)...)

	st := newStream(t)
	var onA []*sender
	for i := range 4 {
		onA = append(onA, st.addSender(fmt.Sprintf("a%d", i), us[i], room, 50, 0, a, b))
	}
	st.addSender("b", us[4], room, 50, 0, b)
	subsA := st.addSubscribers("on-a-", 2, reader, room, a, b)
	st.addSubscribers("on-b-", 2, reader, room, b)
	st.start()
	st.waitReceipts(400, 30*time.Second)

	a.signal(syscall.SIGTERM)
	termed := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- a.wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("node a after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("node a still running 20 s after SIGTERM")
		a.signal(syscall.SIGKILL)
		<-exited
	}
	exitTook := time.Since(termed)
	_, n0 := st.l.maxSeq()
	st.waitReceipts(n0+250, 60*time.Second)
	n, behind := st.finish(10 * time.Second)
	if len(behind) > 0 {
		t.Errorf("10 s after the last receipt (seq %d) subscribers were behind: %s", n, strings.Join(behind, ", "))
	}

	for _, s := range subsA {
		s.mu.Lock()
		if s.resumes == 0 {
			t.Errorf("subscriber %s of node a never resumed on b", s.name)
		} else if len(s.closes) > 0 {
			t.Logf("subscriber %s of node a: %s, then resumed on b", s.name, s.closes[0].why)
		}
		s.mu.Unlock()
	}
	st.l.mu.Lock()
	var wrong []string
	for code, k := range st.l.refusals {
		if !safeRefusal(code) {
			wrong = append(wrong, fmt.Sprintf("%d refused with code %q (%s)", k, code, st.l.examples[code]))
		}
	}
	st.l.mu.Unlock()
	if len(wrong) > 0 {
		t.Errorf("refusals at SIGTERM must be unavailable (safe to send again): %s", strings.Join(wrong, "; "))
	}
	recs := st.l.snapshot()
	unreceipted := 0
	for _, r := range recs {
		if r.receipt.IsZero() {
			unreceipted++
		}
	}
	if unreceipted > 0 {
		t.Errorf("%d messages never receipted, even sent again on b", unreceipted)
	}

	// Send again, on b, the last receipted messages of a's senders before
	// the SIGTERM, with the same body: each is answered with its original
	// seq and stores nothing.
	repeats := 0
	for i, snd := range onA {
		c, err := dialStomp(b.Addr(), us[i].token)
		if err != nil {
			t.Fatalf("repeat: %v", err)
		}
		var mine []sendRec
		for _, r := range recs {
			if r.sender == snd.name && !r.receipt.IsZero() && r.receipt.Before(termed) {
				mine = append(mine, r)
			}
		}
		if len(mine) > 5 {
			mine = mine[len(mine)-5:]
		}
		for _, r := range mine {
			if err := c.write(sendFrame(room, r.cid, sendBody(r.cid, r.first, strings.Repeat("x", snd.pad)))); err != nil {
				t.Fatal(err)
			}
			f, err := c.next(10 * time.Second)
			if err != nil {
				t.Fatalf("repeat of %s: %v", r.cid, err)
			}
			if got := string(f.Get("seq")); got != fmt.Sprint(r.seq) {
				t.Errorf("repeat of %s (seq %d) answered %s seq %q, want its seq", r.cid, r.seq, describe(f), got)
			}
			repeats++
		}
		c.close()
	}
	t.Logf("node a exited %v after SIGTERM; refusals: %s; %d repeats of receipted client-ids checked", ms(exitTook), st.l.refusalSummary(), repeats)

	v := checkStore(pgRows(t, e.store, room), recs)
	assertStore(t, v)
	bad := assertSubscribers(t, st.subs, n)
	report(t, result{name: "8 SIGTERM under load (2 nodes)", v: v, subs: len(st.subs), subFaults: bad,
		recovery: fmt.Sprintf("node exited in %s", ms(exitTook)),
		notes:    fmt.Sprintf("refusals: %s; %d unreceipted; %d repeats got their seq", st.l.refusalSummary(), unreceipted, repeats)})
}
