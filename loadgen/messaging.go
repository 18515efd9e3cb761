package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// msgClient is one virtual user of a messaging scenario: a STOMP
// connection subscribed to its room, sending to it and receiving from it.
type msgClient struct {
	idx      int
	conn     *stompConn
	cf       *cfConn // instead of conn against Centrifugo (centrifugo.go)
	room     int     // index in msgRun.subs
	sendDest string  // SEND destination
	clientID string  // prefix of client-id headers ("" for none)

	mu      sync.Mutex      // guards pending
	pending map[int64]int64 // receipt id → send time (ns since msgRun.base)
	acked   chan struct{}   // signalled on each receipt (closed-loop sending)

	// Owned by the reader goroutine.
	last []int32 // per sender, the highest message number seen

	acc     account       // Parley: the user's account (read PUTs)
	roomID  string        // Parley: the room's id
	maxSeq  atomic.Int64  // the newest seq received
	readReq chan struct{} // ReadAfterSend: a PUT read is due
	events  atomic.Int64  // room event frames received

	received     atomic.Int64
	lastDelivery atomic.Int64 // ns since msgRun.base
}

// msgRun is the shared state of a direct or group run.
type msgRun struct {
	r       *run
	base    time.Time // the clock of body timestamps (monotonic)
	subs    []int64   // subscribers per room
	cls     []*msgClient
	ack     *Recorder // SEND → RECEIPT
	closing atomic.Bool

	sent, accepted, expected, dups atomic.Int64
	typing, readPuts               atomic.Int64
	roomIDs                        []string // Parley: the rooms' ids
	readers                        sync.WaitGroup

	senders  int // clients 0..senders-1 send; 0: every client (bigroom.go)
	readBuf  int // read buffer size of a connection; 0: busyBuffer
	accounts int // Parley: users to sign up, client i is user i mod accounts; 0: one per client
}

func (m *msgRun) now() int64 { return int64(time.Since(m.base)) }

// direct is seed 000: Users users in Users/2 direct rooms, ramped up over
// RampUp, each sending Loops messages to its peer; latency is send → the
// peer receives it.
func (r *run) direct(ctx context.Context) error {
	m := &msgRun{r: r, base: time.Now(), ack: NewRecorder()}
	n := r.o.Users
	m.subs = make([]int64, n/2)
	m.cls = make([]*msgClient, n)
	for i := range m.cls {
		m.cls[i] = &msgClient{idx: i, room: i / 2}
	}
	if err := m.setup(ctx, func(ctx context.Context, accs []account) ([]string, error) {
		ids := make([]string, n/2)
		r.setPhase("rooms", int64(n/2), 0)
		err := parallel(ctx, n/2, r.o.SetupConcurrency, func(ctx context.Context, k int) error {
			rm, err := accs[2*k].createDirect(ctx, accs[2*k+1].ID)
			ids[k] = rm.ID
			r.done.Add(1)
			return err
		})
		return ids, err
	}); err != nil {
		return err
	}
	return m.measure(ctx)
}

// group is seed 002: Users members of one room, each sending every
// MinInterval..MaxInterval; every member receives every message.
func (r *run) group(ctx context.Context) error {
	m := &msgRun{r: r, base: time.Now(), ack: NewRecorder()}
	m.subs = make([]int64, 1)
	m.cls = make([]*msgClient, r.o.Users)
	for i := range m.cls {
		m.cls[i] = &msgClient{idx: i}
	}
	if err := m.setup(ctx, func(ctx context.Context, accs []account) ([]string, error) {
		rm, err := accs[0].createGroup(ctx, "bench group", 0)
		if err != nil {
			return nil, err
		}
		return []string{rm.ID}, r.joinAll(ctx, accs[1:], []roomInfo{rm})
	}); err != nil {
		return err
	}
	// After the set-up and its joins' batches, which the nodes' relays
	// publish while the clients connect: they are not the messages'.
	before := m.settledCounters(ctx)
	if err := m.measure(ctx); err != nil {
		return err
	}
	after := m.brokerCounters(ctx)
	res := r.res.Messaging
	if v, ok := delta(before, after, "parley_broker_publishes_total"); ok {
		res.Publishes = &v
	}
	if v, ok := delta(before, after, "parley_messages_accepted_total"); ok {
		res.Messages = &v
	}
	switch {
	case res.Messages != nil && *res.Messages > 0:
		pub := 0.0 // single node without a broker publishes nothing
		if res.Publishes != nil {
			pub = *res.Publishes
		}
		per := pub / *res.Messages
		res.PerMessage = &per
	case r.o.Target == TargetParley:
		r.res.Notes = append(r.res.Notes, "publishes per message: n.a. (no parley_messages_accepted_total in /metrics)")
	}
	return nil
}

// setup signs up the users and makes the rooms (Parley) or names topics
// (RabbitMQ), then connects and subscribes every client.
func (m *msgRun) setup(ctx context.Context, makeRooms func(context.Context, []account) ([]string, error)) error {
	r := m.r
	tag := runID()
	accs, dests, sendDests, err := m.destinations(ctx, makeRooms, tag)
	if err != nil {
		return err
	}
	r.setPhase("connect", int64(len(m.cls)), 0)
	err = parallel(ctx, len(m.cls), r.o.SetupConcurrency*4, func(ctx context.Context, i int) error {
		c := m.cls[i]
		if r.o.Target == TargetCentrifugo {
			return m.connectCentrifugo(ctx, c, dests[c.room])
		}
		return m.connectSTOMP(ctx, i, accs, dests, sendDests, tag)
	})
	for _, c := range m.cls {
		if c.conn != nil || c.cf != nil {
			m.subs[c.room]++
		}
	}
	if err != nil {
		m.closeAll()
		return err
	}
	for _, c := range m.cls {
		m.readers.Add(1)
		go m.read(c)
	}
	return nil
}

// destinations signs up the users and makes the rooms (Parley) or names
// topics tagged with tag (RabbitMQ, Centrifugo), and returns the accounts
// of the clients (Parley), the destination every room's clients subscribe
// to and the one they send to.
func (m *msgRun) destinations(ctx context.Context, makeRooms func(context.Context, []account) ([]string, error), tag string) (accs []account, dests, sendDests []string, err error) {
	r := m.r
	dests = make([]string, len(m.subs))
	sendDests = make([]string, len(m.subs))
	if r.o.Target == TargetParley {
		n := len(m.cls)
		if m.accounts > 0 {
			n = min(m.accounts, n)
		}
		if accs, err = r.signUp(ctx, n); err != nil {
			return nil, nil, nil, err
		}
		ids, err := makeRooms(ctx, accs)
		if err != nil {
			return nil, nil, nil, err
		}
		m.roomIDs = ids
		for i := n; i < len(m.cls); i++ {
			accs = append(accs, accs[i%n])
		}
		for i, id := range ids {
			dests[i], sendDests[i] = "/topic/rooms."+id, "/app/rooms."+id
		}
	} else {
		for i := range dests {
			dests[i] = "/topic/bench." + tag + "." + string(r.scn) + "." + strconv.Itoa(i)
			sendDests[i] = dests[i]
		}
	}
	return accs, dests, sendDests, nil
}

// connectSTOMP connects client i over STOMP (as its account accs[i] on
// Parley), subscribes it to its room's destination in dests and readies
// its send state.
func (m *msgRun) connectSTOMP(ctx context.Context, i int, accs []account, dests, sendDests []string, tag string) error {
	r := m.r
	c := m.cls[i]
	var (
		url string
		p   connectParams
	)
	if r.o.Target == TargetParley {
		url = wsURLOf(accs[i].node.base)
		p = connectParams{host: hostOf(url), passcode: accs[i].Token, bearer: accs[i].Token}
		c.clientID = tag + "-" + strconv.Itoa(i) + "-"
	} else {
		url = r.o.URLs[i%len(r.o.URLs)]
		p = connectParams{host: "/", login: r.o.Login, passcode: r.o.Passcode}
	}
	conn, err := dialSTOMP(ctx, url, p, r.o.Timeout, m.bufSize())
	if err != nil {
		return fmt.Errorf("user %d: %w", i, err)
	}
	c.conn = conn
	if err := conn.subscribe("0", dests[c.room], r.o.Timeout); err != nil {
		return fmt.Errorf("user %d: %w", i, err)
	}
	if r.o.Target == TargetParley {
		c.acc, c.roomID = accs[i], m.roomIDs[c.room]
		if r.o.ReadAfterSend {
			c.readReq = make(chan struct{}, 1)
		}
		if r.o.Events {
			if err := conn.subscribe("1", dests[c.room]+".events", r.o.Timeout); err != nil {
				return fmt.Errorf("user %d: %w", i, err)
			}
		}
	}
	c.sendDest = sendDests[c.room]
	c.pending = map[int64]int64{}
	c.acked = make(chan struct{}, 1)
	c.last = make([]int32, m.senderCount())
	r.done.Add(1)
	return nil
}

// measure runs the senders, then drains receipts and deliveries.
func (m *msgRun) measure(ctx context.Context) error {
	r := m.r
	o := r.o
	var lastSent int64
	r.extra = func() int64 {
		s := m.sent.Load()
		d := s - lastSent
		lastSent = s
		return d
	}
	r.res.Unit = "delivery"
	start := r.startMeasure(int64(len(m.cls) * o.Loops))
	deadline := start.Add(o.Duration)
	var wg sync.WaitGroup
	sideCtx, stopSide := context.WithCancel(ctx)
	defer stopSide()
	side := m.startEventLoad(sideCtx, start, deadline)
	for _, c := range m.cls[:m.senderCount()] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.sendLoop(ctx, c, start, deadline)
		}()
	}
	wg.Wait()
	sendEnd := time.Now()
	stopSide()
	side.Wait()

	drainStart := m.drainAll(ctx)
	r.stopMeasure(start)
	// The measurement lasts until the last send; the drain is apart.
	r.res.Elapsed = sendEnd.Sub(start).Seconds()
	drain := time.Since(drainStart)
	m.closeAll()
	m.messagingResult(start, drain)
	return nil
}

// sendLoop sends client c's Loops messages from start (plus its share of
// the ramp-up) until deadline: at random intervals, or each when the last
// is receipted in a closed loop.
func (m *msgRun) sendLoop(ctx context.Context, c *msgClient, start, deadline time.Time) {
	r := m.r
	o := r.o
	closedLoop := o.MaxInterval <= 0
	var head, body []byte
	var err error
	rng := rand.New(rand.NewPCG(uint64(c.idx), uint64(start.UnixNano())))
	next := start
	if o.RampUp > 0 {
		next = next.Add(time.Duration(int64(o.RampUp) * int64(c.idx) / int64(len(m.cls))))
	}
	if !closedLoop {
		// A random phase: with a fixed interval, users that all
		// started at once would otherwise send in lockstep bursts.
		next = next.Add(interval(rng, 0, o.MaxInterval))
	}
	for n := 1; n <= o.Loops; n++ {
		if !sleepUntil(ctx, next, deadline) {
			return
		}
		if head, body, err = m.send(c, n, head, body); err != nil {
			r.rec.Error(c.idx, "send: "+errKind(err))
			return
		}
		r.done.Add(1)
		if closedLoop {
			if !m.awaitReceipt(ctx, c, o.Timeout) {
				return
			}
			next = time.Now()
		} else {
			next = next.Add(interval(rng, o.MinInterval, o.MaxInterval))
		}
	}
}

// drainAll waits up to Drain for the outstanding receipts and deliveries
// and returns when the drain started.
func (m *msgRun) drainAll(ctx context.Context) time.Time {
	r := m.r
	o := r.o
	r.setPhaseUnits("drain", m.expected.Load(), o.Drain, phaseUnits{done: "deliveries in", rate: "deliveries/s", upTo: true})
	drainStart := time.Now()
	drainEnd := drainStart.Add(o.Drain)
	for time.Now().Before(drainEnd) && ctx.Err() == nil {
		// Receipts still coming in add to the deliveries expected.
		r.total.Store(m.expected.Load())
		r.done.Store(m.received())
		if m.pendingReceipts() == 0 && m.received() >= m.expected.Load() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return drainStart
}

// messagingResult sets the run's result from the counters, the
// measurement's start and the drain's length, and counts a missing
// receipt as an error.
func (m *msgRun) messagingResult(start time.Time, drain time.Duration) {
	r := m.r
	res := &MessagingResult{
		Sent: m.sent.Load(), Accepted: m.accepted.Load(), Expected: m.expected.Load(),
		Received: m.received(), Duplicates: m.dups.Load(),
		Receipt: Summarize(m.ack.Total()), DrainTime: drain.Seconds(),
	}
	res.Lost = max(res.Expected-res.Received, 0)
	if missing := m.pendingReceipts(); missing > 0 {
		for i := int64(0); i < missing; i++ {
			r.rec.Error(0, "no receipt")
		}
	}
	if res.Duplicates > 0 {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("%d deliveries seen twice or out of order", res.Duplicates))
	}
	if r.res.Elapsed > 0 {
		res.SendRate = float64(res.Accepted) / r.res.Elapsed
	}
	var lastDelivery int64
	for _, c := range m.cls {
		lastDelivery = max(lastDelivery, c.lastDelivery.Load())
	}
	if span := time.Duration(lastDelivery) - start.Sub(m.base); span > 0 {
		res.Deliveries = float64(res.Received) / span.Seconds()
	}
	for _, c := range m.cls {
		res.EventDeliveries += c.events.Load()
	}
	res.TypingSent, res.ReadPuts = m.typing.Load(), m.readPuts.Load()
	if r.res.Elapsed > 0 {
		res.EventRate = float64(res.EventDeliveries) / r.res.Elapsed
	}
	r.res.Messaging = res
	r.res.Ops = res.Received
	r.res.Throughput = res.Deliveries
}

// senderCount is how many clients send: the first ones.
func (m *msgRun) senderCount() int {
	if m.senders > 0 && m.senders < len(m.cls) {
		return m.senders
	}
	return len(m.cls)
}

// bufSize is the read buffer size of a connection.
func (m *msgRun) bufSize() int {
	if m.readBuf > 0 {
		return m.readBuf
	}
	return busyBuffer
}

// awaitReceipt waits for the receipt of c's last SEND.
func (m *msgRun) awaitReceipt(ctx context.Context, c *msgClient, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.acked:
		return true
	case <-t.C:
		m.r.rec.Error(c.idx, "receipt timeout")
		return false
	case <-ctx.Done():
		return false
	}
}

func (m *msgRun) received() int64 {
	var n int64
	for _, c := range m.cls {
		n += c.received.Load()
	}
	return n
}

func (m *msgRun) pendingReceipts() int64 {
	var n int64
	for _, c := range m.cls {
		if c.pending == nil {
			continue
		}
		c.mu.Lock()
		n += int64(len(c.pending))
		c.mu.Unlock()
	}
	return n
}

// closeAll disconnects every client and waits for the readers.
func (m *msgRun) closeAll() {
	m.closing.Store(true)
	var wg sync.WaitGroup
	for _, c := range m.cls {
		switch {
		case c.cf != nil:
			wg.Go(c.cf.close)
		case c.conn != nil:
			wg.Go(c.conn.close)
		}
	}
	wg.Wait()
	m.readers.Wait()
}

// interval draws a uniform duration in [lo, hi].
func interval(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// errKind shortens a connection error to its kind.
func errKind(err error) string {
	if errors.Is(err, errClosed) {
		return "closed by server"
	}
	return netKind(err)
}

// startEventLoad starts the room-event side load of a group run: typing
// signals every Options.Typing per member (random phase), and a PUT read
// after each receipted message (Options.ReadAfterSend), until ctx ends or
// deadline. The caller waits for the returned group.
func (m *msgRun) startEventLoad(ctx context.Context, start, deadline time.Time) *sync.WaitGroup {
	var wg sync.WaitGroup
	o := m.r.o
	if o.Target != TargetParley {
		return &wg
	}
	for _, c := range m.cls {
		if o.Typing > 0 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c.idx), uint64(start.UnixNano())+1))
				head := c.conn.frame("SEND", "destination", c.sendDest+".typing")
				for next := start.Add(interval(rng, 0, o.Typing)); sleepUntil(ctx, next, deadline); next = next.Add(o.Typing) {
					if err := c.conn.writeFrame(head, nil); err != nil {
						return
					}
					m.typing.Add(1)
				}
			})
		}
		if c.readReq != nil {
			wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-c.readReq:
					}
					seq := c.maxSeq.Load()
					if seq == 0 {
						continue
					}
					rctx, cancel := context.WithTimeout(ctx, o.Timeout)
					err := c.acc.markRead(rctx, c.roomID, seq)
					cancel()
					switch {
					case err == nil:
						m.readPuts.Add(1)
					case ctx.Err() == nil:
						m.r.rec.Error(c.idx, "read: "+netKind(err))
					}
				}
			})
		}
	}
	return &wg
}
