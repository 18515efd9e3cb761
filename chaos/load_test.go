package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"parley/stomp"
)

// sendRec is one message a sender means to send, and what became of it.
type sendRec struct {
	cid     string
	sender  string
	first   time.Time // first attempt
	receipt time.Time // zero until receipted
	seq     int64     // from the RECEIPT
	tries   int
}

// ledger is what the senders of a case know: every message they tried,
// its receipt, and every refusal.
type ledger struct {
	mu        sync.Mutex // guards the following fields
	recs      []*sendRec
	refusals  map[string]int    // ERROR code (or "no answer") → count
	examples  map[string]string // code → one ERROR text
	refusedAt []time.Time       // time of each refusal
}

func newLedger() *ledger {
	return &ledger{refusals: map[string]int{}, examples: map[string]string{}}
}

func (l *ledger) add(sender, cid string) *sendRec {
	r := &sendRec{cid: cid, sender: sender, first: time.Now()}
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
	return r
}

func (l *ledger) receipted(r *sendRec, seq int64) {
	l.mu.Lock()
	r.seq, r.receipt = seq, time.Now()
	l.mu.Unlock()
}

// tried counts one more attempt to send r.
func (l *ledger) tried(r *sendRec) {
	l.mu.Lock()
	r.tries++
	l.mu.Unlock()
}

func (l *ledger) refused(code, text string) {
	l.mu.Lock()
	l.refusals[code]++
	if _, ok := l.examples[code]; !ok {
		l.examples[code] = text
	}
	l.refusedAt = append(l.refusedAt, time.Now())
	l.mu.Unlock()
}

// snapshot returns copies of every record.
func (l *ledger) snapshot() []sendRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]sendRec, len(l.recs))
	for i, r := range l.recs {
		out[i] = *r
	}
	return out
}

// maxSeq is the highest receipted seq, and the number of receipts.
func (l *ledger) maxSeq() (max int64, n int) {
	for _, r := range l.snapshot() {
		if !r.receipt.IsZero() {
			n++
			if r.seq > max {
				max = r.seq
			}
		}
	}
	return max, n
}

// maxSeqAt is the highest seq receipted at or before t.
func (l *ledger) maxSeqAt(t time.Time) int64 {
	var max int64
	for _, r := range l.snapshot() {
		if !r.receipt.IsZero() && !r.receipt.After(t) && r.seq > max {
			max = r.seq
		}
	}
	return max
}

// refusalSummary is "code×n, …" with an example text per code.
func (l *ledger) refusalSummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.refusals) == 0 {
		return "none"
	}
	var parts []string
	for code, n := range l.refusals {
		parts = append(parts, fmt.Sprintf("%s×%d (%q)", code, n, l.examples[code]))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// sender sends receipted messages with a client-id at a steady rate to
// the first of its nodes that takes a connection. A message that is
// refused or unanswered is sent again with the same client-id (design
// §5: safe to re-send) until it is receipted or abort ends.
type sender struct {
	name  string
	token string
	room  string
	nodes []*node
	rate  float64 // messages per second
	limit int     // messages in all; 0 for no limit
	pad   int     // extra body bytes
	l     *ledger
	stop  <-chan struct{} // no new message after it closes
	abort context.Context // stop retrying the pending one
	sent  atomic.Int64    // receipted messages
	conn  *stompConn
}

func (s *sender) run() {
	defer func() {
		if s.conn != nil {
			s.conn.close()
		}
	}()
	tick := time.NewTicker(time.Duration(float64(time.Second) / s.rate))
	defer tick.Stop()
	pad := strings.Repeat("x", s.pad)
	for i := 1; s.limit == 0 || i <= s.limit; i++ {
		select {
		case <-s.stop:
			return
		case <-s.abort.Done():
			return
		case <-tick.C:
		}
		r := s.l.add(s.name, fmt.Sprintf("%s-%d", s.name, i))
		if !s.deliver(r, pad) {
			return
		}
	}
}

// sendBody is the text of the message with client-id cid, first tried at
// first: the same on every attempt, since the server refuses a client-id
// sent again with another body (conflict) and answers a true repeat with
// the original. The time in it is what subscribers measure latency from.
func sendBody(cid string, first time.Time, pad string) string {
	return fmt.Sprintf("%s %d %s", cid, first.UnixNano(), pad)
}

// deliver sends r until it is receipted (true) or abort ends (false).
func (s *sender) deliver(r *sendRec, pad string) bool {
	for s.abort.Err() == nil {
		if s.conn == nil && !s.connect() {
			continue
		}
		s.l.tried(r)
		err := s.conn.write(sendFrame(s.room, r.cid, sendBody(r.cid, r.first, pad)))
		var f *stomp.Frame
		if err == nil {
			f, err = s.conn.next(20 * time.Second)
		}
		switch {
		case err != nil:
			s.l.refused("no answer", err.Error())
		case f.Command == stomp.Receipt && string(f.Get("receipt-id")) == r.cid:
			seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
			s.l.receipted(r, seq)
			s.sent.Add(1)
			return true
		case f.Command == stomp.Error:
			s.l.refused(string(f.Get("code")), describe(f))
		default:
			s.l.refused("unexpected", describe(f))
		}
		s.conn.close()
		s.conn = nil
		pause(s.abort, 50*time.Millisecond)
	}
	return false
}

// connect dials the first node that takes the connection; false (after
// a pause) if none does.
func (s *sender) connect() bool {
	for _, n := range s.nodes {
		if c, err := dialStomp(n.Addr(), s.token); err == nil {
			s.conn = c
			return true
		} else if re, ok := err.(*refusedError); ok {
			s.l.refused("connect:"+re.code, re.text)
		} else {
			s.l.refused("connect", err.Error())
		}
	}
	pause(s.abort, 100*time.Millisecond)
	return false
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// delivery is one MESSAGE a subscriber read.
type delivery struct {
	seq int64
	at  time.Time
	lat time.Duration // from the send time in the body
}

// subscriber follows a room on the first of its nodes that takes it,
// from seq 0, and after every ERROR or lost connection resumes with
// since-seq on the first node that takes it again. It checks the order
// as it reads.
type subscriber struct {
	name  string
	token string
	room  string
	nodes []*node

	last    atomic.Int64 // highest seq read
	holding atomic.Bool  // stop reading (a slow consumer) until release closes
	release chan struct{}

	mu      sync.Mutex // guards the following fields
	got     []delivery
	bad     []string // order violations: duplicates and holes
	closes  []closeRec
	gaps    []gapRec
	resumes int
}

// gapRec is a MESSAGE whose seq was past the next one.
type gapRec struct {
	at         time.Time
	after, seq int64
}

// closeRec is how a subscriber's session ended.
type closeRec struct {
	at   time.Time
	why  string // "ERROR message:…" or the read error
	slow bool   // ERROR slow consumer
}

func newSubscriber(name, token, room string, nodes ...*node) *subscriber {
	return &subscriber{name: name, token: token, room: room, nodes: nodes, release: make(chan struct{})}
}

// subscribeAll connects every subscriber once (so that each is
// subscribed before the case starts) and runs them on wg until ctx ends.
func subscribeAll(ctx context.Context, wg *sync.WaitGroup, subs []*subscriber) error {
	conns := make([]*stompConn, len(subs))
	var firstErr error
	var mu sync.Mutex
	var cw sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, s := range subs {
		cw.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := s.subscribe(ctx, true)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", s.name, err)
			}
			conns[i] = c
		})
	}
	cw.Wait()
	if firstErr != nil {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
		return firstErr
	}
	for i, s := range subs {
		wg.Go(func() { s.run(ctx, conns[i]) })
	}
	return nil
}

// subscribe connects to the first node that takes the session and
// subscribes after the last seq read; with wait, it waits for the
// SUBSCRIBE's RECEIPT (taking in any MESSAGE before it).
func (s *subscriber) subscribe(ctx context.Context, wait bool) (*stompConn, error) {
	var err error
	for _, n := range s.nodes {
		var c *stompConn
		if c, err = dialStomp(n.Addr(), s.token); err != nil {
			continue
		}
		if err = c.write(subscribeFrame(s.room, s.last.Load())); err != nil {
			c.close()
			continue
		}
		for wait {
			f, rerr := c.next(10 * time.Second)
			if rerr != nil {
				c.close()
				return nil, fmt.Errorf("subscribe: %w", rerr)
			}
			switch f.Command {
			case stomp.Receipt:
				wait = false
			case stomp.Message:
				if !s.message(f, time.Now()) {
					c.close()
					return nil, fmt.Errorf("gap at subscribe")
				}
			default:
				c.close()
				return nil, fmt.Errorf("subscribe: %s", describe(f))
			}
		}
		return c, nil
	}
	return nil, err
}

func (s *subscriber) run(ctx context.Context, c *stompConn) {
	for ctx.Err() == nil {
		if c == nil {
			var err error
			if c, err = s.subscribe(ctx, false); err != nil {
				pause(ctx, 100*time.Millisecond)
				continue
			}
			s.mu.Lock()
			s.resumes++
			s.mu.Unlock()
		}
		s.read(ctx, c)
		c.close()
		c = nil
		pause(ctx, 20*time.Millisecond)
	}
}

// read reads one session until it ends.
func (s *subscriber) read(ctx context.Context, c *stompConn) {
	stop := context.AfterFunc(ctx, c.close)
	defer stop()
	for {
		if s.holding.Load() {
			select {
			case <-s.release:
			case <-ctx.Done():
				return
			}
		}
		f, err := c.next(0)
		now := time.Now()
		if err != nil {
			s.closed(closeRec{at: now, why: err.Error()})
			return
		}
		switch f.Command {
		case stomp.Message:
			if !s.message(f, now) {
				return // a gap: resume with since-seq, as design §5 asks
			}
		case stomp.Error:
			s.closed(closeRec{at: now, why: describe(f), slow: string(f.Get("message")) == "slow consumer"})
			return
		}
	}
}

// message records a MESSAGE read at now, with its latency from the
// message's first attempt (the time in its body, see sendBody). A seq
// past the next one is a gap: the live stream was cut (design §5), so the
// message is not taken and message returns false for the subscriber to
// resume with since-seq.
func (s *subscriber) message(f *stomp.Frame, now time.Time) bool {
	seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
	var lat time.Duration
	if _, rest, ok := strings.Cut(string(f.Body), " "); ok {
		ns, _, _ := strings.Cut(rest, " ")
		if n, err := strconv.ParseInt(ns, 10, 64); err == nil {
			lat = now.Sub(time.Unix(0, n))
		}
	}
	return s.delivered(delivery{seq: seq, at: now, lat: lat})
}

func (s *subscriber) delivered(d delivery) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.last.Load()
	switch {
	case d.seq <= last:
		s.bad = append(s.bad, fmt.Sprintf("seq %d again after %d", d.seq, last))
		return true
	case d.seq > last+1:
		s.gaps = append(s.gaps, gapRec{at: d.at, after: last, seq: d.seq})
		s.closes = append(s.closes, closeRec{at: d.at, why: fmt.Sprintf("gap: seq %d after %d", d.seq, last)})
		return false
	}
	s.last.Store(d.seq)
	s.got = append(s.got, d)
	return true
}

func (s *subscriber) closed(c closeRec) {
	s.mu.Lock()
	s.closes = append(s.closes, c)
	s.mu.Unlock()
}

// reachedAt is when the subscriber first read a seq of at least seq, and
// whether it has.
func (s *subscriber) reachedAt(seq int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.got {
		if d.seq >= seq {
			return d.at, true
		}
	}
	return time.Time{}, false
}

// deliveries returns a copy of what the subscriber read.
func (s *subscriber) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.got...)
}

// violations checks that the subscriber read every seq 1..n exactly once
// in order, and returns what is wrong ("" for nothing).
func (s *subscriber) violations(n int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var why []string
	if len(s.bad) > 0 {
		b := s.bad
		if len(b) > 3 {
			b = append(b[:3:3], fmt.Sprintf("and %d more", len(s.bad)-3))
		}
		why = append(why, strings.Join(b, "; "))
	}
	if last := s.last.Load(); last != n {
		why = append(why, fmt.Sprintf("last seq %d, want %d", last, n))
	}
	if int64(len(s.got)) != n && len(s.bad) == 0 {
		why = append(why, fmt.Sprintf("%d messages, want %d", len(s.got), n))
	}
	return strings.Join(why, "; ")
}

// waitSeq waits until every subscriber has read seq, at most d. It
// returns the subscribers that have not, with their last seq.
func waitSeq(subs []*subscriber, seq int64, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		var behind []string
		for _, s := range subs {
			if l := s.last.Load(); l < seq {
				behind = append(behind, fmt.Sprintf("%s at %d", s.name, l))
			}
		}
		if len(behind) == 0 || time.Now().After(deadline) {
			return behind
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recovery is how long after t every subscriber had read every message
// receipted by t: the latest first time a subscriber read a seq of at
// least l.maxSeqAt(t), less t. ok is false if one never did.
func recovery(subs []*subscriber, l *ledger, t time.Time) (d time.Duration, who string, ok bool) {
	m := l.maxSeqAt(t)
	for _, s := range subs {
		at, reached := s.reachedAt(m)
		if !reached {
			return 0, s.name, false
		}
		if at.Sub(t) > d {
			d, who = at.Sub(t), s.name
		}
	}
	return d, who, true
}

// latencies are the delivery latencies of the subscribers' messages sent
// at or after from (by the send time in the body), sorted.
func latencies(subs []*subscriber, from time.Time) []time.Duration {
	return latenciesBetween(subs, from, time.Time{})
}

// latenciesBetween is latencies of the messages sent from from until to
// (zero: no end).
func latenciesBetween(subs []*subscriber, from, to time.Time) []time.Duration {
	var out []time.Duration
	for _, s := range subs {
		for _, d := range s.deliveries() {
			sent := d.at.Add(-d.lat)
			if d.lat > 0 && !sent.Before(from) && (to.IsZero() || sent.Before(to)) {
				out = append(out, d.lat)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// quantile of sorted durations, 0 for none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

// resumedAfter is how long after t the last of subs first read a message
// (after its resume, for a subscriber cut at t), and whether all did.
func resumedAfter(subs []*subscriber, t time.Time) (time.Duration, bool) {
	var d time.Duration
	for _, s := range subs {
		found := false
		for _, del := range s.deliveries() {
			if del.at.After(t) {
				d, found = max(d, del.at.Sub(t)), true
				break
			}
		}
		if !found {
			return d, false
		}
	}
	return d, true
}

// lateUntil is when the last message that reached a subscriber more than
// late after its receipt arrived, considering arrivals after t; zero if
// none did. A stalled relay shows as a run of late messages.
func lateUntil(subs []*subscriber, l *ledger, t time.Time, late time.Duration) (time.Time, int) {
	receipts := map[int64]time.Time{}
	for _, r := range l.snapshot() {
		if !r.receipt.IsZero() {
			receipts[r.seq] = r.receipt
		}
	}
	var last time.Time
	n := 0
	for _, s := range subs {
		for _, d := range s.deliveries() {
			r, ok := receipts[d.seq]
			if !ok || !d.at.After(t) || d.at.Sub(r) <= late {
				continue
			}
			n++
			if d.at.After(last) {
				last = d.at
			}
		}
	}
	return last, n
}

// gapSummary counts the gaps the subscribers saw (each a resume).
func gapSummary(subs []*subscriber) string {
	n, widest := 0, int64(0)
	for _, s := range subs {
		s.mu.Lock()
		for _, g := range s.gaps {
			n++
			widest = max(widest, g.seq-g.after-1)
		}
		s.mu.Unlock()
	}
	if n == 0 {
		return "no gaps"
	}
	return fmt.Sprintf("%d gaps (widest %d seqs), each resumed with since-seq", n, widest)
}
