package cluster

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
)

// Local is the node's own fan-out (hub.Hub).
type Local interface {
	// Deliver hands a message to the local subscribers of its room and to
	// the personal queues of recipients.
	Deliver(m parley.Message, recipients []string)
}

// Store is what the relay reads from the shared store.
type Store interface {
	Members(ctx context.Context, roomID string) ([]string, error)
	Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error)
}

// Config configures a Relay. Zero fields take the documented defaults.
type Config struct {
	// Node is this node's id (required).
	Node string
	// Store reads members and history (required).
	Store Store
	// Local is the local fan-out (required).
	Local Local
	// ApplyLeaves takes leave events, this node's and other nodes', and
	// ends the user's subscriptions to the room on this node (hub.Hub's
	// Apply; required). The relay passes it leaves only.
	ApplyLeaves func(evs []parley.Event)
	// ApplyChanges, when set, takes the edits and deletions
	// (EventEdited, EventDeleted), this node's and other nodes', one at a
	// time, on the relay's goroutine: it must not block. The relay
	// publishes each change of this node to every other known node
	// (edits.go).
	ApplyChanges func(evs []parley.Event)
	// Events, when set, takes the room events other nodes send: joins,
	// leaves, role and room changes, unbans, edits and deletions, typing,
	// coalesced reads and mentions (roomevents.Events.ApplyRemote). It
	// must not block.
	Events func(ev parley.Event)
	// GapWait is how long a held message waits before the relay reads
	// (again) the gap below it from the store: the first message of a room
	// never seen, whose gap's start is unknown, and a gap whose immediate
	// read failed or did not close it. Default 100 ms.
	GapWait time.Duration
	// RouteTTL bounds the life of a cached route; presence changes and
	// joins and leaves drop routes sooner. Default 10 s.
	RouteTTL time.Duration
	// MaxPositions bounds the rooms whose delivery position (the next seq)
	// the relay keeps, at about 150 bytes each; past it the least recently
	// used are forgotten, and a forgotten room's next message waits
	// GapWait. It bounds too the rooms whose heads wait to be written
	// again while Heads fails. Default 100,000.
	MaxPositions int
	// Heads, when set, keeps each room's last committed seq where every
	// node reads it (redis.Heads): the relay writes the heads of this
	// node's commits, and reads the heads of the rooms it delivers on
	// CheckHeads and every HeadCheck, and fills from the store a room
	// whose head is past what it delivered, so that a batch that was
	// never sent is made up for without the room's next message.
	Heads Heads
	// HeadCheck is how often the heads are checked (and the live nodes
	// read). Default 2 s.
	HeadCheck time.Duration
	// Nodes, when set, lists the live nodes (redis.Presence.LiveNodes): the
	// destinations of every message while routes are unsure.
	Nodes NodeLister
	// OnLiveNodes, when set, hears each listing of the live nodes that
	// names this node (one that does not proves nothing: a reset) while
	// routes are sure (not within Settle of a presence failure or reset),
	// every HeadCheck and on CheckHeads (redis.HotStore.RecoverGone). It
	// runs on the relay's keeper goroutine: it may wait for Redis, not
	// call the relay.
	OnLiveNodes func(nodes []string)
	// Settle is how long routes are unsure after presence could not be
	// read or was reset (PresenceReset): the time the nodes take to write
	// their entries again, one presence heartbeat. Meanwhile a message
	// goes to every known node (seen in a route or in Nodes), not only to
	// those of its route. Default 5 s.
	Settle time.Duration
	// Subscribed, when set, lists the rooms with local topic subscribers
	// and their positions (hub.Hub.Rooms, hub.Hub.Room): a head check also
	// covers the rooms among them the relay has never delivered, and fills
	// such a room from its subscribers' lowest position to its head; and
	// the delivery of a room first seen starts there once its first
	// message has waited GapWait.
	Subscribed Subscribed
	// Written, when set, is the shared hot data (redis.HotStore, whose
	// Apply runs before the relay's): the relay publishes a commit of this
	// node to the other nodes, and writes its heads, only once Written
	// holds it, so that a client on another node that hears of a message
	// and then reads the room from Redis finds it there. Delivery to this
	// node's sessions does not wait.
	Written Watermark
	// MaxSignals bounds the typing and read signals waiting for the
	// signal goroutine (signals.go); past it a signal is dropped and
	// counted, never a message. Default 4,096.
	MaxSignals int
	// Registerer, when set, registers the relay's metrics.
	Registerer prometheus.Registerer
	// Logger logs failures. Default slog.Default().
	Logger *slog.Logger
}

// Relay connects a node's store events, its local fan-out and the cluster.
// Create it with New, attach the broker and presence with Start, and stop
// it with Close.
type Relay struct {
	cfg      Config
	log      *slog.Logger
	m        *metrics
	broker   parley.Broker
	presence parley.Presence

	qmu     sync.Mutex // guards the following fields
	queue   []item
	started bool
	closing bool
	wake    chan struct{}
	done    chan struct{}

	routes *routeCache // where rooms' members are (routes.go)

	hmu     sync.Mutex       // guards the following field
	pending map[string]int64 // heads of this node's commits not yet written

	smu         sync.Mutex // guards the following fields
	sendq       []outgoing // this node's commits for the sender goroutine (send.go)
	sendClosing bool       // Close: the sender returns once sendq is empty
	sendWake    chan struct{}
	sendDone    chan struct{} // closed when the sender has returned

	sigmu      sync.Mutex     // guards the following fields
	sigq       []parley.Event // typing and read signals for the signal goroutine (signals.go)
	sigStarted bool
	sigClosing bool          // Close: the signal goroutine drops the queue and returns
	sigWake    chan struct{} // a signal is queued
	sigDone    chan struct{} // closed when the signal goroutine has returned

	headsDown    atomic.Bool   // the last read or write of Heads failed
	presenceDown atomic.Bool   // the last presence read of a route failed (logged once a spell)
	fromStore    atomic.Bool   // the next head check reads the store, not Heads (a node died)
	headsWake    chan struct{} // a head is pending
	checkWake    chan struct{} // CheckHeads was called
	stop         chan struct{} // closed by Close: the keeper returns
	keepDone     chan struct{} // closed when the keeper has returned

	reads sync.WaitGroup // the gap reads on their way (readGap); Close waits for them

	// Owned by the run goroutine.
	rooms   map[string]*roomState
	evictAt int // evict passes no sooner than at this many rooms
	spare   []item
	out     outgoing // what the commit being handled sends (send.go)
}

// item is one unit of work for the run goroutine.
type item struct {
	local []parley.Event          // events this node committed
	mark  uint64                  // their commit's mark in Config.Written
	batch *parley.Batch           // a batch from another node
	tick  string                  // a room whose gap timer fired
	snap  chan<- map[string]int64 // a head check asks for the rooms' delivered seqs
	heads map[string]int64        // rooms whose head is past what was delivered
	gap   *gapPage                // what a read of a gap brought (readGap)
	done  chan struct{}           // closed once handled, when not nil
}

// New returns a relay that queues what it is given until Start.
func New(cfg Config) *Relay {
	if cfg.GapWait <= 0 {
		cfg.GapWait = 100 * time.Millisecond
	}
	if cfg.RouteTTL <= 0 {
		cfg.RouteTTL = 10 * time.Second
	}
	if cfg.MaxPositions <= 0 {
		cfg.MaxPositions = 100_000
	}
	if cfg.HeadCheck <= 0 {
		cfg.HeadCheck = 2 * time.Second
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 5 * time.Second
	}
	if cfg.MaxSignals <= 0 {
		cfg.MaxSignals = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Relay{
		cfg:     cfg,
		log:     cfg.Logger,
		m:       newMetrics(cfg.Registerer),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		routes:  newRouteCache(cfg.RouteTTL, cfg.Settle),
		rooms:   map[string]*roomState{},
		pending: map[string]int64{},

		sigWake:   make(chan struct{}, 1),
		sigDone:   make(chan struct{}),
		sendWake:  make(chan struct{}, 1),
		sendDone:  make(chan struct{}),
		headsWake: make(chan struct{}, 1),
		checkWake: make(chan struct{}, 1),
		stop:      make(chan struct{}),
		keepDone:  make(chan struct{}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_cluster_routes_unsure",
			Help: "1 while routes are unsure (for Settle after a presence reset, such as a cluster's first start on an empty Redis): messages then go to every known node.",
		}, func() float64 {
			if r.routes.unsure() {
				return 1
			}
			return 0
		}))
	}
	return r
}

// Start attaches the broker and the presence and starts relaying. The
// broker's handler is Receive and its gone hook Gone; the presence's change
// hook is PresenceChanged.
func (r *Relay) Start(b parley.Broker, p parley.Presence) {
	r.broker, r.presence = b, p
	r.qmu.Lock()
	r.started = true
	r.qmu.Unlock()
	r.refreshNodes()
	go r.run()
	go r.sendLoop()
	r.startSignals()
	go r.keep()
	r.signal()
	r.CheckHeads()
}

// Apply is the store's event sink: it queues the events, with their
// commit's mark in Config.Written, and returns.
func (r *Relay) Apply(evs []parley.Event) {
	keep := make([]parley.Event, 0, len(evs))
	for _, ev := range evs {
		switch ev.Kind {
		case parley.EventMessage, parley.EventJoin, parley.EventLeave, parley.EventRoom,
			parley.EventRole, parley.EventRoomInfo, parley.EventUnban, parley.EventEdited, parley.EventDeleted, parley.EventReaction, parley.EventThread, parley.EventPin:
			keep = append(keep, ev)
		}
	}
	if len(keep) > 0 {
		it := item{local: keep}
		if r.cfg.Written != nil {
			it.mark = r.cfg.Written.Mark()
		}
		r.enqueue(it)
	}
}

// Receive is the broker's batch handler. It returns once the relay has
// handed the batch's message to the local fan-out (hub.Deliver, which
// queues it for the sessions), holds it for an older one of its room, or
// dropped it as a duplicate, so that the broker acknowledges only what the
// relay has taken over, and its prefetch bounds what waits in the relay: a
// slow relay slows the deliveries from RabbitMQ instead of growing a queue
// here. After Close it returns at once (the node is going away; its queue
// is deleted).
func (r *Relay) Receive(b parley.Batch) {
	done := make(chan struct{})
	if r.enqueue(item{batch: &b, done: done}) {
		<-done
	}
}

// enqueue queues it for the run goroutine; false after Close.
func (r *Relay) enqueue(it item) bool {
	r.qmu.Lock()
	if r.closing {
		r.qmu.Unlock()
		return false
	}
	r.queue = append(r.queue, it)
	n := len(r.queue)
	started := r.started
	r.qmu.Unlock()
	r.m.queued.Set(float64(n))
	if started {
		r.signal()
	}
	return true
}

func (r *Relay) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// PresenceChanged is the presence change hook: every cached route is
// dropped (a presence change is rare next to messages), and the user's
// remembered nodes (everyone's for ""), so that rebuilding a route reads
// presence for the changed users only: a storm of reconnects into a big
// room costs a lookup per reconnect, not one per member per message.
func (r *Relay) PresenceChanged(userID string) {
	r.routes.presenceChanged(userID)
	if userID == "" { // a node dropped, notifications missed, a reset
		r.fromStore.Store(true)
		r.CheckHeads()
	}
}

// PresenceReset is the presence's reset hook: the presence map may miss
// entries for one heartbeat (Redis came back, maybe empty), so for
// Config.Settle messages go to every known node, and the heads are
// checked.
//
// What was read from presence meanwhile may miss nodes, so nothing of it
// is kept: the cached routes and users' nodes are dropped, and a read in
// progress is not remembered (presence calls the hook from a read that
// finds Redis empty, before the read returns). The heads are checked at
// the first reset of a spell and then at most once per Settle.
func (r *Relay) PresenceReset() {
	if r.routes.reset() {
		r.CheckHeads()
	}
}

// Gone is the broker's hook for a destination without a queue: the node
// is gone, so its presence entries are dropped.
func (r *Relay) Gone(node string) {
	if !r.routes.nodeGone(node) {
		return
	}
	r.m.gone.Inc()
	r.fromStore.Store(true)
	r.CheckHeads()
	r.log.Warn("cluster: node gone, dropping its presence", "node", node)
	if r.presence == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.presence.DropNode(ctx, node); err != nil {
		r.log.Error("cluster: drop node", "node", node, "err", err)
	}
}

// Close relays what is queued, then stops.
func (r *Relay) Close() {
	r.qmu.Lock()
	if r.closing {
		r.qmu.Unlock()
		return
	}
	r.closing = true
	started := r.started
	var waiting []item
	if !started {
		waiting, r.queue = r.queue, nil
	}
	r.qmu.Unlock()
	r.stopSignals() // queued signals are dropped: they are worth nothing later
	if !started {
		for _, it := range waiting { // never relayed: release Receive
			if it.done != nil {
				close(it.done)
			}
		}
		return
	}
	r.signal()
	<-r.done
	r.reads.Wait() // each bounded by its timeout; what they bring is dropped
	r.stopSending()
	close(r.stop)
	<-r.keepDone
}
