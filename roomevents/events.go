package roomevents

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"parley"
	"parley/subindex"

	"github.com/prometheus/client_golang/prometheus"
)

// Rooms is what Events reads of rooms: members for the personal queues and
// the read events' size limit, memberships for presence events. The cache
// serves both from memory.
type Rooms interface {
	Members(ctx context.Context, roomID string) ([]string, error)
	Memberships(ctx context.Context, userID string) ([]parley.Member, error)
}

// SeenLookup tells whether users are online anywhere (the gateway on one
// node, redis.Presence in a cluster): the chat.Seen contract.
type SeenLookup interface {
	Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error)
}

// Config configures Events. Zero fields take the documented
// defaults.
type Config struct {
	// Rooms reads members and memberships (required).
	Rooms Rooms
	// Seen, when set, tells who is online: without it there are no
	// online and offline events.
	Seen SeenLookup
	// OnTyping, when set, hears every typing event of a local member that
	// passed the throttle (the cluster relay sends it to the room's other
	// nodes). It runs on the dispatch goroutine and must not block.
	OnTyping func(roomID, userID string)
	// OnReads, when set, hears the read positions this node committed, once
	// per read window of their room (the cluster relay sends them to the
	// room's other nodes). Same rules as OnTyping.
	OnReads func(roomID string, reads []parley.Read)
	// TypingEvery is the least time between two typing events of one user
	// in one room; more are absorbed. Default 2 s.
	TypingEvery time.Duration
	// TypingBatch is how long a room's typing events wait for more, so
	// that each subscriber gets them in one hand-off (one socket write)
	// rather than one each. Default 100 ms; negative: no wait.
	TypingBatch time.Duration
	// ReadEvery is the least time between two read events of one room.
	// Default 1 s.
	ReadEvery time.Duration
	// ReadMaxMembers: rooms with more members have no read events.
	// Default 100.
	ReadMaxMembers int
	// TypingMaxMembers: rooms with more members have no typing events
	// (signals are absorbed, counted, and not sent to other nodes), so
	// that one typist costs at most this many deliveries every
	// TypingEvery. Default DefaultTypingMaxMembers.
	TypingMaxMembers int
	// PresenceQuiet is how long a user's presence must stay unchanged
	// before it is announced. Default 5 s.
	PresenceQuiet time.Duration
	// MaxQueue bounds the events waiting for dispatch. Default 65,536.
	MaxQueue int
	// Now and AfterFunc are the clock; tests replace them. Defaults
	// time.Now and time.AfterFunc.
	Now       func() time.Time
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Registerer, when set, registers the metrics.
	Registerer prometheus.Registerer
	// Logger logs failures. Default slog.Default().
	Logger *slog.Logger
}

// Events fans room events out to the local event subscriptions. Create it
// with New and stop it with Close.
type Events struct {
	cfg Config
	log *slog.Logger
	m   eventMetrics

	qmu      sync.Mutex // guards the following fields
	queue    []evItem
	queued   map[string]bool // users with an itemPresence in queue
	overflow bool            // an item was dropped: drop every subscription
	closing  bool
	wake     chan struct{}
	done     chan struct{}

	// pmu guards what the member listing is told of presence (Seen): it
	// reports the state the events last announced for a user whose
	// change is still in its quiet period. A leaf lock, taken under qmu.
	pmu      sync.Mutex
	said     map[string]bool          // users last announced online (absent: offline, or never announced)
	settling map[string]*settlingUser // users with a change not yet announced or found unchanged

	tmu     sync.Mutex           // guards the typing throttle:
	typed   map[string]time.Time // room+"\x00"+user -> last typing event let in
	typedAt int                  // sweep typed when it reaches this size

	mu    sync.Mutex           // guards the following fields and every Sub's idx
	rooms subindex.Index[*Sub] // room id -> its event subscriptions
	users subindex.Index[*Sub] // user id -> its personal event queues

	// Owned by the dispatch goroutine.
	reads      map[string]*readWindow
	readsAt    int
	presence   map[string]*userPresence
	typingWait map[string][]*RoomEvent // room -> typing events waiting for TypingBatch
	spare      []evItem
	one        [1]*RoomEvent // the batch of one event (deliverLocked)
	own        []*RoomEvent  // a subscriber's share of a typing batch, reused
}

// New returns running Events.
func New(cfg Config) *Events {
	def := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	def(&cfg.TypingEvery, 2*time.Second)
	if cfg.TypingBatch == 0 {
		cfg.TypingBatch = 100 * time.Millisecond
	}
	def(&cfg.ReadEvery, time.Second)
	def(&cfg.PresenceQuiet, 5*time.Second)
	if cfg.ReadMaxMembers <= 0 {
		cfg.ReadMaxMembers = 100
	}
	if cfg.TypingMaxMembers <= 0 {
		cfg.TypingMaxMembers = DefaultTypingMaxMembers
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 1 << 16
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AfterFunc == nil {
		cfg.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := &Events{
		cfg:        cfg,
		log:        cfg.Logger,
		m:          newEventMetrics(cfg.Registerer),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		rooms:      subindex.Index[*Sub]{},
		users:      subindex.Index[*Sub]{},
		queued:     map[string]bool{},
		typed:      map[string]time.Time{},
		typedAt:    1024,
		reads:      map[string]*readWindow{},
		readsAt:    1024,
		presence:   map[string]*userPresence{},
		said:       map[string]bool{},
		settling:   map[string]*settlingUser{},
		typingWait: map[string][]*RoomEvent{},
	}
	go e.run()
	return e
}

// Close dispatches what is queued, then stops. Pending read windows and
// presence checks are dropped.
func (e *Events) Close() error {
	e.qmu.Lock()
	if !e.closing {
		e.closing = true
		close(e.wake)
	}
	e.qmu.Unlock()
	<-e.done
	return nil
}
