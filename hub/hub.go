package hub

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"parley"
	"parley/subindex"

	"github.com/prometheus/client_golang/prometheus"
)

// Members lists the user ids of a room's members. The cache serves it from
// memory. It fails with parley.CodeNotFound for an unknown room.
type Members interface {
	Members(ctx context.Context, roomID string) ([]string, error)
}

// Config configures a Hub. Zero fields take the documented defaults.
type Config struct {
	// Members lists a room's members, for the personal queues (required).
	Members Members
	// MaxBuffered bounds the live messages a subscription buffers while it
	// catches up on history; past it, the receiver is told it lagged.
	// Default 4096.
	MaxBuffered int
	// Registerer, when set, registers the hub's metrics.
	Registerer prometheus.Registerer
	// Logger logs failures. Default slog.Default().
	Logger *slog.Logger
}

// Hub is the local fan-out. Create it with New and stop it with Close.
type Hub struct {
	members     Members
	maxBuffered int
	log         *slog.Logger
	m           metrics

	qmu     sync.Mutex // guards the following fields
	queue   []item     // events waiting for dispatch, in commit order
	closing bool
	wake    chan struct{} // signalled when queue becomes non-empty
	done    chan struct{} // closed when the dispatch goroutine returns

	mu    sync.Mutex           // guards the following fields and every Sub's hub state
	rooms subindex.Index[*Sub] // room id -> subscriptions to its topic
	users subindex.Index[*Sub] // user id -> subscriptions to the personal queue
	nsubs [2]int               // room and user subscriptions, for the gauge

	spare []item     // the previous batch, reused by run
	run1  []*Message // the messages of the run being dispatched, reused
}

// item is one event waiting for dispatch.
type item struct {
	msg        *Message // a message, or nil for a leave
	recipients []string // explicit recipients (Deliver); nil: the room's members
	explicit   bool
	roomID     string // leave: the room
	userID     string // leave: the user who left
	reason     string // leave: parley.LeaveLeft, LeaveRemoved or LeaveBanned
}

// New returns a running Hub.
func New(cfg Config) *Hub {
	if cfg.MaxBuffered <= 0 {
		cfg.MaxBuffered = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Hub{
		members:     cfg.Members,
		maxBuffered: cfg.MaxBuffered,
		log:         cfg.Logger,
		m:           newMetrics(cfg.Registerer),
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		rooms:       subindex.Index[*Sub]{},
		users:       subindex.Index[*Sub]{},
	}
	go h.run()
	return h
}

// Apply takes committed events from the store, in commit order. It is a
// parley.EventSink: it never blocks and keeps nothing of evs after it
// returns. Messages and leaves are dispatched; other events are ignored.
func (h *Hub) Apply(evs []parley.Event) {
	now := time.Now()
	h.qmu.Lock()
	n := 0
	for i := range evs {
		ev := &evs[i]
		switch ev.Kind {
		case parley.EventMessage:
			h.queue = append(h.queue, item{msg: NewMessage(ev.Message, now)})
			n++
		case parley.EventLeave:
			h.queue = append(h.queue, item{roomID: ev.Room.ID, userID: ev.UserID, reason: ev.Reason})
			n++
		}
	}
	h.signalLocked(n)
	h.qmu.Unlock()
}

// Deliver queues m for the subscribers of its room on this node and for the
// personal queues of recipients, after every event queued before it. It is
// the entry point of a cluster broker, which knows the recipients on this
// node; it never blocks.
func (h *Hub) Deliver(m parley.Message, recipients []string) {
	h.qmu.Lock()
	h.queue = append(h.queue, item{msg: NewMessage(m, time.Now()), recipients: recipients, explicit: true})
	h.signalLocked(1)
	h.qmu.Unlock()
}

// signalLocked records n new items and wakes the dispatcher.
func (h *Hub) signalLocked(n int) {
	if n == 0 || h.closing {
		return
	}
	h.m.pending.Add(float64(n))
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Close dispatches the events queued so far, then stops the dispatch
// goroutine. Events applied after Close are ignored.
func (h *Hub) Close() error {
	h.qmu.Lock()
	if !h.closing {
		h.closing = true
		close(h.wake)
	}
	h.qmu.Unlock()
	<-h.done
	return nil
}

// run is the dispatch goroutine, owned by the Hub and stopped by Close.
func (h *Hub) run() {
	defer close(h.done)
	for {
		h.qmu.Lock()
		batch := h.queue
		h.queue = h.spare[:0]
		closing := h.closing
		h.qmu.Unlock()
		for i := 0; i < len(batch); {
			n := runLength(batch[i:])
			h.dispatch(batch[i : i+n])
			i += n
		}
		clear(batch)
		h.m.pending.Sub(float64(len(batch)))
		h.spare = batch
		if len(batch) > 0 {
			continue
		}
		if closing {
			return
		}
		<-h.wake
	}
}

// runLength is how many items at the start of items are dispatched
// together: consecutive messages of one room from the store, which every
// receiver then gets in one Deliver (and its session in one write).
func runLength(items []item) int {
	first := &items[0]
	if first.msg == nil || first.explicit {
		return 1
	}
	n := 1
	for n < len(items) && items[n].msg != nil && !items[n].explicit && items[n].msg.RoomID == first.msg.RoomID {
		n++
	}
	return n
}

// dispatch processes one event, or a run of messages of one room.
func (h *Hub) dispatch(run []item) {
	it := &run[0]
	if it.msg == nil {
		h.leave(it.roomID, it.userID, it.reason)
		return
	}
	ms := h.run1[:0]
	start := time.Now()
	for i := range run {
		ms = append(ms, run[i].msg)
		if c := run[i].msg.Committed; !c.IsZero() {
			h.m.dispatched.Observe(start.Sub(c).Seconds())
		}
	}
	h.run1 = ms
	defer clear(ms)
	m := it.msg
	recipients := it.recipients
	if !it.explicit && h.hasUserSubs() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		recipients, err = h.members.Members(ctx, m.RoomID)
		cancel()
		if err != nil {
			// The room subscribers still get the message. Which personal
			// queues should have is unknown, so none may go on as if
			// nothing was missed: every one of them is dropped and its
			// client told (Lagged), to resume from history.
			h.log.Error("hub: members of room", "room", m.RoomID, "err", err)
			h.m.memberErrors.Inc()
			h.dropUserSubs()
		}
	}
	n := 0
	h.mu.Lock()
	for _, s := range h.rooms[m.RoomID] {
		h.sendLocked(s, ms)
		n++
	}
	for _, u := range recipients {
		for _, s := range h.users[u] {
			h.sendLocked(s, ms)
			n++
		}
	}
	h.mu.Unlock()
	end := time.Now()
	for _, m := range ms {
		if !m.Committed.IsZero() {
			h.m.handedOff.Observe(end.Sub(m.Committed).Seconds())
		}
	}
	h.m.messages.Add(float64(len(ms)))
	h.m.fanout.Add(float64(n * len(ms)))
}

// dropUserSubs drops every personal-queue subscription and tells each
// receiver it lagged.
func (h *Hub) dropUserSubs() {
	h.mu.Lock()
	defer h.mu.Unlock()
	var subs []*Sub
	for _, list := range h.users {
		subs = append(subs, list...)
	}
	for _, s := range subs {
		h.removeLocked(s)
		s.removed.Store(true)
		h.m.lagged.Inc()
		s.To.Lagged()
	}
}

func (h *Hub) hasUserSubs() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.users) > 0
}

// leave drops every subscription of userID to the room's topic: a member who
// leaves stops receiving the room at once. A removed or banned member's
// receivers that implement Evicter are told (the gateway ends the session
// with ERROR); a plain leave drops them silently.
func (h *Hub) leave(roomID, userID, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.rooms[roomID]
	for i := 0; i < len(subs); {
		if s := subs[i]; s.UserID == userID {
			h.removeLocked(s)
			s.removed.Store(true)
			if r, ok := s.To.(Evicter); ok && reason != parley.LeaveLeft {
				r.Evicted(roomID, reason)
			}
			subs = h.rooms[roomID]
			continue
		}
		i++
	}
}
