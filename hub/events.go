package hub

// Room events (design §4 "Room events"): member, typing, read, online and
// offline events for the subscribers of /topic/rooms.{id}.events and of
// the personal /user/queue/events. They are not messages: nothing of them
// is stored, and they never share the messages' path.
//
// # Intake and dispatch
//
// Events has its own queue and its own dispatch goroutine, apart from the
// Hub's: a slow member lookup, a burst of typing or a presence storm never
// delays a message. Apply (a parley.EventSink, installed after the Hub's),
// ApplyRemote (the cluster relay's batches), Typing and PresenceChanged
// only append to the queue and return. The queue is bounded
// (EventsConfig.MaxQueue): past it an event is dropped, counted, and every
// event subscription is dropped as lagged (its client gets ERROR slow
// consumer and resubscribes), so that no client misses an event without
// learning it. Hand-offs to receivers never block: each session's
// outbound queue has its own bound and slow-consumer rule.
//
// Since that overflow reaches every subscriber of the node, what one user
// can put in the queue is bounded before it is queued: a typing signal
// within TypingEvery of the last one of its user and room is absorbed at
// the intake (Typing, ApplyRemote), and a user's presence change already
// waiting in the queue absorbs the next ones (the dispatcher restarts the
// quiet period once for both). A flood of signals from one client costs
// it a map lookup each and never fills the queue.
//
// # Adding an event kind
//
// A committed change becomes an event in one place: Events.commit, one
// case per parley.EventKind, which builds the RoomEvent and calls
// toRoom with its recipients (the room's event subscribers, and the
// personal event queues of its members). A new kind is one more case
// there (edited and deleted are: changes.go); to reach other nodes in
// cluster mode, the cluster relay must also carry it (Relay.Apply's
// filter, and the cases of Relay.local and Relay.receive).
//
// # Locks
//
// Events.mu guards the subscriptions; EventReceiver methods run under it,
// so it is taken before a session's lock and receivers must not call back
// into Events. Events.qmu guards the queue and is a leaf; so is
// Events.tmu, the typing throttle's (released before qmu is taken).

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"parley"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultTypingMaxMembers is the largest room with typing events, by
// default: the size up to which read events are sent too. Past it "… is
// typing" is noise more than news, and one typist would cost a delivery to
// every member every 2 s.
const DefaultTypingMaxMembers = 100

// Event kinds, the value of the event header.
const (
	KindMember  = "member"
	KindTyping  = "typing"
	KindRead    = "read"
	KindOnline  = "online"
	KindOffline = "offline"
	KindEdited  = "edited"  // a message's new version (changes.go)
	KindDeleted = "deleted" // a message's tombstone (changes.go)
)

// Actions of a member event, the value of the action header.
const (
	ActionJoined  = "joined"
	ActionLeft    = "left"
	ActionRemoved = "removed"
	ActionBanned  = "banned"
	ActionUnban   = "unbanned" // a ban was lifted (the user is not a member): the moderators' ban lists
	ActionRole    = "role"
	ActionRoom    = "room" // the room's title or capacity changed
)

// RoomEvent is one event on its way to local subscribers, shared by all of
// them and encoded once per frame shape (Encoded), like a Message.
type RoomEvent struct {
	ID      string      // message-id of its frames
	Kind    string      // the event header
	RoomID  string      // the room; "" for an event of the personal queue only
	Headers [][2]string // further headers, in order
	Body    []byte      // JSON

	from   string // typing: its user, who does not get it
	change int64  // edited, deleted: the room's change number
	enc    [NumShapes]atomic.Value
}

// Header returns the value of header name, "" when absent.
func (e *RoomEvent) Header(name string) string {
	for _, h := range e.Headers {
		if h[0] == name {
			return h[1]
		}
	}
	return ""
}

// Encoded returns the transport's encoding of e for shape, computed once
// (see Message.Encoded).
func (e *RoomEvent) Encoded(shape int, encode func(*RoomEvent) any) any {
	if v := e.enc[shape].Load(); v != nil {
		return v
	}
	v := encode(e)
	if e.enc[shape].CompareAndSwap(nil, v) {
		return v
	}
	return e.enc[shape].Load()
}

// EventReceiver is the consumer of one event subscription. Its methods
// run under Events.mu: they must not block nor call back into Events.
type EventReceiver interface {
	// DeliverEvents hands over events, in order; they are shared and
	// must not be changed, and the slice is only valid during the call. A
	// receiver that cannot take them deals with the overflow itself (the
	// gateway closes its session as a slow consumer).
	DeliverEvents(evs []*RoomEvent)
	// Evicted reports that the user was removed (reason
	// parley.LeaveRemoved) or banned (parley.LeaveBanned) from the room
	// of a room subscription; Events has dropped the subscription.
	Evicted(roomID, reason string)
	// Lagged reports that the node's event intake overflowed: Events has
	// dropped the subscription and the client must be told.
	Lagged()
}

// EventSub is one event subscription. The caller fills the exported
// fields and passes it to Events.Subscribe.
type EventSub struct {
	To     EventReceiver
	UserID string // the subscriber
	RoomID string // the room of /topic/rooms.{id}.events; "" for /user/queue/events
	// Hold keeps the events for the subscription from its receiver from
	// Subscribe until Start: its caller checks membership in between (a
	// leave committed meanwhile drops the registration), and a
	// non-member must get nothing of the room.
	Hold bool

	idx     int          // position in its list; -1 when not registered
	held    []*RoomEvent // events waiting for Start
	holding bool         // events go to held until Start
	lost    bool         // held overflowed: Start drops it as lagged
	floor   int64        // edited and deleted events at or below it are dropped (StartAfter)
	removed atomic.Bool
}

// maxHeld bounds the events held for a subscription until Start.
const maxHeld = 1024

// Removed reports whether Events dropped the subscription on its own (the
// user left the room, or the intake overflowed).
func (s *EventSub) Removed() bool { return s.removed.Load() }

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

// EventsConfig configures Events. Zero fields take the documented
// defaults.
type EventsConfig struct {
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
// with NewEvents and stop it with Close.
type Events struct {
	cfg EventsConfig
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

	mu    sync.Mutex // guards the following fields and every EventSub's idx
	rooms map[string][]*EventSub
	users map[string][]*EventSub

	// Owned by the dispatch goroutine.
	reads      map[string]*readWindow
	readsAt    int
	presence   map[string]*userPresence
	typingWait map[string][]*RoomEvent // room -> typing events waiting for TypingBatch
	spare      []evItem
	one        [1]*RoomEvent // the batch of one event (deliverLocked)
	own        []*RoomEvent  // a subscriber's share of a typing batch, reused
}

// evItem is one unit of work for the dispatch goroutine.
type evItem struct {
	kind   int
	evs    []parley.Event // itemCommits, itemRemote
	room   string         // itemTyping, itemFlush
	user   string         // itemTyping, itemPresence, itemCheck
	remote bool           // itemTyping: from another node
	gen    uint64         // itemCheck: the timer's generation
}

const (
	itemCommits = iota + 1
	itemRemote
	itemTyping
	itemPresence
	itemFlush
	itemCheck
	itemTypingFlush
)

// readWindow is one room's read coalescing state.
type readWindow struct {
	last    time.Time     // when its last read event went out
	pending []parley.Read // positions moved since, in order, one per user
	forward []parley.Read // of pending, the PUT reads committed here: for OnReads
	armed   bool          // a flush is scheduled
}

// userPresence is what this node last announced of a user.
type userPresence struct {
	online bool        // the last announcement (absent entry: offline)
	gen    uint64      // the pending check's generation
	stop   func() bool // stops the pending check
	heard  uint64      // the changes (settlingUser.heard) the pending check covers
}

// settlingUser is a user whose presence changed and whose quiet period
// has not ended: the member listing keeps showing online, the state the
// events last announced.
type settlingUser struct {
	online bool
	heard  uint64 // changes heard at the intake; the check that covers them all ends the spell
}

// NewEvents returns running Events.
func NewEvents(cfg EventsConfig) *Events {
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
		rooms:      map[string][]*EventSub{},
		users:      map[string][]*EventSub{},
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

// Apply takes this node's committed events (a parley.EventSink): it never
// blocks and keeps nothing of evs but copies. What can make no event is
// left out here, so that the messages of a big room (every one moves its
// sender's read position) neither wake the dispatcher on each commit nor
// fill its queue.
func (e *Events) Apply(evs []parley.Event) {
	var keep []parley.Event
	for i := range evs {
		if eventKind(evs[i].Kind) && !e.noReadEvents(&evs[i]) {
			keep = append(keep, evs[i])
		}
	}
	if len(keep) > 0 {
		e.enqueue(evItem{kind: itemCommits, evs: keep}, true)
	}
}

// ApplyRemote takes an event another node committed or signalled, as the
// cluster relay receives it: joins, leaves, role and room changes, typing
// and the read positions that node coalesced.
func (e *Events) ApplyRemote(ev parley.Event) {
	if ev.Kind == parley.EventTyping {
		if e.letTyping(ev.Room.ID, ev.UserID) {
			e.enqueue(evItem{kind: itemTyping, room: ev.Room.ID, user: ev.UserID, remote: true}, true)
		}
		return
	}
	if eventKind(ev.Kind) {
		e.enqueue(evItem{kind: itemRemote, evs: []parley.Event{ev}}, true)
	}
}

// eventKind reports whether committed events of kind k may make room
// events: every kind but a room's creation (its members join with
// EventJoin); Events.commit decides.
func eventKind(k parley.EventKind) bool {
	return k != parley.EventRoom
}

// noReadEvents reports whether ev is a read position, or a message (which
// moves its sender's), of a room too big for read events: Events.commit
// would pass it to read, which drops it for the same member count.
func (e *Events) noReadEvents(ev *parley.Event) bool {
	switch ev.Kind {
	case parley.EventMessage, parley.EventRead, parley.EventReads:
		return ev.Room.MemberCount > e.cfg.ReadMaxMembers
	}
	return false
}

// Typing takes a typing signal of a member on this node (the caller has
// checked membership). More than one per TypingEvery is absorbed.
func (e *Events) Typing(roomID, userID string) {
	if e.letTyping(roomID, userID) {
		e.enqueue(evItem{kind: itemTyping, room: roomID, user: userID}, true)
	}
}

// TypingAbsorbed reports whether a typing signal of userID in roomID now
// would be absorbed by the throttle (one was let in less than TypingEvery
// ago), and counts it absorbed if so. The gateway asks before it checks
// membership, and drops such a signal unchecked: it would make no event
// anyway, and a flood of them then costs no lookup.
func (e *Events) TypingAbsorbed(roomID, userID string) bool {
	now := e.cfg.Now()
	e.tmu.Lock()
	last, ok := e.typed[roomID+"\x00"+userID]
	e.tmu.Unlock()
	if ok && now.Sub(last) < e.cfg.TypingEvery {
		e.m.absorbed.Inc()
		return true
	}
	return false
}

// letTyping is the typing throttle, at the intake: it reports whether a
// signal of userID in roomID makes an event (none for TypingEvery after
// the last), and absorbs it otherwise.
func (e *Events) letTyping(roomID, userID string) bool {
	now := e.cfg.Now()
	key := roomID + "\x00" + userID
	e.tmu.Lock()
	defer e.tmu.Unlock()
	if last, ok := e.typed[key]; ok && now.Sub(last) < e.cfg.TypingEvery {
		e.m.absorbed.Inc()
		return false
	}
	e.typed[key] = now
	if len(e.typed) >= e.typedAt {
		for k, t := range e.typed {
			if now.Sub(t) >= e.cfg.TypingEvery {
				delete(e.typed, k)
			}
		}
		e.typedAt = max(1024, 2*len(e.typed))
	}
	return true
}

// PresenceChanged hears that userID's sessions changed (its first opened
// or its last closed, on any node; "" for anyone). It never blocks; the
// change is announced once it has held for PresenceQuiet.
func (e *Events) PresenceChanged(userID string) {
	if e.cfg.Seen == nil {
		return
	}
	e.enqueue(evItem{kind: itemPresence, user: userID}, true)
}

// enqueue queues it; bounded items past MaxQueue are dropped and the
// overflow marked. Timer items are never dropped (they are bounded by the
// rooms and users with state).
func (e *Events) enqueue(it evItem, bounded bool) {
	e.qmu.Lock()
	if e.closing {
		e.qmu.Unlock()
		return
	}
	if it.kind == itemPresence && e.queued[it.user] {
		e.heard(it.user)
		e.qmu.Unlock() // the queued change restarts the quiet period for both
		return
	}
	if bounded && len(e.queue) >= e.cfg.MaxQueue {
		e.overflow = true
		e.qmu.Unlock()
		e.m.dropped.Inc()
		return
	}
	if it.kind == itemPresence {
		e.queued[it.user] = true
		e.heard(it.user)
	}
	e.queue = append(e.queue, it)
	select { // under qmu: Close closes wake under it
	case e.wake <- struct{}{}:
	default:
	}
	e.qmu.Unlock()
}

// heard notes a presence change of userID ("" for anyone announced
// online) that is on its way to the dispatcher: until its quiet period
// ends, Seen reports the user as last announced. Called under qmu.
func (e *Events) heard(userID string) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	note := func(u string) {
		st := e.settling[u]
		if st == nil {
			st = &settlingUser{online: e.said[u]}
			e.settling[u] = st
		}
		st.heard++
	}
	if userID != "" {
		note(userID)
		return
	}
	for u := range e.said {
		note(u)
	}
}

// heardOf returns the changes of userID heard so far (the dispatcher's
// check covers them).
func (e *Events) heardOf(userID string) uint64 {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if st := e.settling[userID]; st != nil {
		return st.heard
	}
	return 0
}

// settled records the end of userID's quiet period: online is what the
// events say of them now, and the listing shows the live state again,
// unless a change came after the check began (heard), whose own check
// ends the spell.
func (e *Events) settled(userID string, online bool, heard uint64) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if online {
		e.said[userID] = true
	} else {
		delete(e.said, userID)
	}
	if st := e.settling[userID]; st != nil {
		st.online = online
		if st.heard == heard {
			delete(e.settling, userID)
		}
	}
}

// Seen is the member listing's presence (chat.Seen): EventsConfig.Seen's
// live state, but for a user whose change is in its quiet period, who is
// shown as the events last announced them (offline if never), so that
// the listing and the online and offline events agree: a reconnect
// within the quiet period shows no flip in either.
func (e *Events) Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error) {
	if e.cfg.Seen == nil {
		return map[string]parley.Seen{}, nil
	}
	live, err := e.cfg.Seen.Seen(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if len(e.settling) == 0 {
		return live, nil
	}
	for _, id := range userIDs {
		if st := e.settling[id]; st != nil {
			p := live[id]
			p.Online = st.online
			live[id] = p
		}
	}
	return live, nil
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

func (e *Events) run() {
	defer close(e.done)
	for {
		e.qmu.Lock()
		batch := e.queue
		e.queue = e.spare[:0]
		clear(e.queued)
		overflow := e.overflow
		e.overflow = false
		closing := e.closing
		e.qmu.Unlock()
		if overflow {
			e.dropAll()
		}
		for i := range batch {
			e.handle(&batch[i])
		}
		clear(batch)
		e.spare = batch
		if len(batch) > 0 {
			continue
		}
		if closing {
			for _, p := range e.presence {
				if p.stop != nil {
					p.stop()
				}
			}
			return
		}
		<-e.wake
	}
}

func (e *Events) handle(it *evItem) {
	switch it.kind {
	case itemCommits:
		for i := range it.evs {
			e.commit(&it.evs[i], false)
		}
	case itemRemote:
		for i := range it.evs {
			e.commit(&it.evs[i], true)
		}
	case itemTyping:
		e.typing(it.room, it.user, it.remote)
	case itemPresence:
		e.presenceChanged(it.user)
	case itemFlush:
		e.flushReads(it.room)
	case itemCheck:
		e.checkPresence(it.user, it.gen)
	case itemTypingFlush:
		e.flushTyping(it.room)
	}
}

// commit turns one committed event (or a remote node's coalesced reads)
// into room events: the one place that maps a parley.EventKind to an event.
func (e *Events) commit(ev *parley.Event, remote bool) {
	room := ev.Room.ID
	switch ev.Kind {
	case parley.EventJoin:
		e.member(ev, ActionJoined, ev.UserID, "")
	case parley.EventLeave:
		action := ActionLeft
		switch ev.Reason {
		case parley.LeaveRemoved:
			action = ActionRemoved
		case parley.LeaveBanned:
			action = ActionBanned
		}
		e.leave(room, ev.UserID, ev.Reason)
		e.member(ev, action, ev.UserID, ev.UserID)
	case parley.EventRole:
		e.member(ev, ActionRole, ev.UserID, "")
	case parley.EventRoomInfo:
		e.member(ev, ActionRoom, ev.ActorID, "")
	case parley.EventUnban:
		e.member(ev, ActionUnban, ev.UserID, "")
	case parley.EventRead:
		e.read(room, ev.Room.MemberCount, []parley.Read{{UserID: ev.UserID, Seq: ev.ReadSeq}}, !remote)
	case parley.EventMessage:
		// The sender's read position moves to its own message. Every node
		// sees the message (its own commit, or the relay's batch), so this
		// read is never forwarded: it costs no publish.
		e.read(room, ev.Room.MemberCount, []parley.Read{{UserID: ev.Message.SenderID, Seq: ev.Message.Seq}}, false)
	case parley.EventReads:
		e.read(room, ev.Room.MemberCount, ev.Reads, false)
	case parley.EventEdited, parley.EventDeleted:
		if e.hasSubs() {
			e.toRoom(ChangeEvent(&ev.Message), "", "")
		}
	}
}

// member sends a member event: action on user, with the room's new info
// as the body. also, when set, is a user who gets it on the personal queue
// though no longer a member (the one who left or was removed).
func (e *Events) member(ev *parley.Event, action, user, also string) {
	if !e.hasSubs() {
		return
	}
	body, _ := json.Marshal(ev.Room)
	h := [][2]string{{"user", user}, {"action", action}}
	if ev.Kind == parley.EventRole {
		h = append(h, [2]string{"role", ev.Role})
	}
	if ev.ActorID != "" {
		h = append(h, [2]string{"actor", ev.ActorID})
	}
	re := &RoomEvent{ID: parley.NewID(), Kind: KindMember, RoomID: ev.Room.ID, Headers: h, Body: body}
	e.toRoom(re, "", also)
}

// toRoom hands re to the event subscribers of its room and to the
// personal event queues of the room's members (and of also), but those of
// except.
func (e *Events) toRoom(re *RoomEvent, except, also string) {
	var members []string
	if e.hasUserSubs() {
		var err error
		if members, err = e.members(re.RoomID); err != nil {
			return
		}
		if also != "" {
			members = append(slices.Clip(members), also)
		}
	}
	e.toMembers(re, members, except)
}

// toMembers hands re to the event subscribers of its room and to the
// personal event queues of members, but those of except.
func (e *Events) toMembers(re *RoomEvent, members []string, except string) {
	n := 0
	e.one[0] = re
	one := e.one[:]
	e.mu.Lock()
	for _, s := range e.rooms[re.RoomID] {
		if s.UserID != except {
			deliverLocked(s, one)
			n++
		}
	}
	for _, u := range members {
		if u == except {
			continue
		}
		for _, s := range e.users[u] {
			deliverLocked(s, one)
			n++
		}
	}
	e.mu.Unlock()
	e.one[0] = nil
	e.m.events.WithLabelValues(re.Kind).Inc()
	e.m.fanout.Add(float64(n))
}

func (e *Events) members(roomID string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ids, err := e.cfg.Rooms.Members(ctx, roomID)
	if err != nil && parley.ErrorCode(err) != parley.CodeNotFound {
		e.log.Error("events: members of room", "room", roomID, "err", err)
		e.m.lookupErrors.Inc()
	}
	return ids, err
}

// leave drops userID's event subscriptions to the room: silently for a
// plain leave (as the Hub drops its topic subscriptions), with Evicted
// for a removal or a ban.
func (e *Events) leave(roomID, userID, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	subs := e.rooms[roomID]
	for i := 0; i < len(subs); {
		s := subs[i]
		if s.UserID != userID {
			i++
			continue
		}
		e.removeLocked(s)
		s.removed.Store(true)
		if reason != parley.LeaveLeft {
			s.To.Evicted(roomID, reason)
		}
		subs = e.rooms[roomID]
	}
}

// typing sends a typing event that passed the throttle (letTyping), but
// in a room of more than TypingMaxMembers members (checked here, on the
// dispatcher, from the members cache: the intake stays a map lookup).
func (e *Events) typing(roomID, userID string, remote bool) {
	ids, err := e.members(roomID)
	if err != nil || len(ids) > e.cfg.TypingMaxMembers {
		e.m.typingCapped.Inc()
		return
	}
	if !remote && e.cfg.OnTyping != nil {
		e.cfg.OnTyping(roomID, userID)
	}
	if !e.hasSubs() {
		return
	}
	body, _ := json.Marshal(struct {
		Room string `json:"room"`
		User string `json:"user"`
	}{roomID, userID})
	re := &RoomEvent{ID: parley.NewID(), Kind: KindTyping, RoomID: roomID, Headers: [][2]string{{"user", userID}}, Body: body, from: userID}
	if e.cfg.TypingBatch < 0 {
		if !e.hasUserSubs() {
			ids = nil
		}
		e.toMembers(re, ids, userID)
		return
	}
	waiting := e.typingWait[roomID]
	e.typingWait[roomID] = append(waiting, re)
	if len(waiting) == 0 {
		e.cfg.AfterFunc(e.cfg.TypingBatch, func() { e.enqueue(evItem{kind: itemTypingFlush, room: roomID}, false) })
	}
}

// flushTyping hands a room's waiting typing events to its subscribers,
// each getting all of them but its own in one call.
func (e *Events) flushTyping(roomID string) {
	evs := e.typingWait[roomID]
	delete(e.typingWait, roomID)
	if len(evs) == 0 {
		return
	}
	var members []string
	if e.hasUserSubs() {
		var err error
		if members, err = e.members(roomID); err != nil {
			return
		}
	}
	n := 0
	share := func(s *EventSub) {
		own := e.own[:0]
		for _, ev := range evs {
			if ev.from != s.UserID {
				own = append(own, ev)
			}
		}
		if len(own) > 0 {
			deliverLocked(s, own)
			n += len(own)
		}
		clear(own)
		e.own = own
	}
	e.mu.Lock()
	for _, s := range e.rooms[roomID] {
		share(s)
	}
	for _, u := range members {
		for _, s := range e.users[u] {
			share(s)
		}
	}
	e.mu.Unlock()
	e.m.events.WithLabelValues(KindTyping).Add(float64(len(evs)))
	e.m.fanout.Add(float64(n))
}

// read adds moved read positions to the room's window: the first after a
// quiet ReadEvery goes out at once, the rest wait for the window's end
// and go out together (read events are coalesced per room). members is
// the room's member count when the event knows it (0: look it up).
// forward marks positions the other nodes cannot know of but from this
// one (a PUT read committed here): they go to OnReads too.
func (e *Events) read(roomID string, members int, reads []parley.Read, forward bool) {
	if members > e.cfg.ReadMaxMembers {
		return
	}
	forward = forward && e.cfg.OnReads != nil
	if !forward && !e.hasSubs() {
		return // nobody here to tell, and nobody elsewhere
	}
	w := e.reads[roomID]
	if w == nil {
		w = &readWindow{}
		e.reads[roomID] = w
	}
	w.pending = mergeReads(w.pending, reads)
	if forward {
		w.forward = mergeReads(w.forward, reads)
	}
	if w.armed {
		return
	}
	now := e.cfg.Now()
	if wait := w.last.Add(e.cfg.ReadEvery).Sub(now); wait > 0 {
		w.armed = true
		e.cfg.AfterFunc(wait, func() { e.enqueue(evItem{kind: itemFlush, room: roomID}, false) })
		return
	}
	e.flushReads(roomID)
}

// mergeReads adds reads to list: one entry per user, at its highest seq,
// in the order the users last moved.
func mergeReads(list, reads []parley.Read) []parley.Read {
	for _, r := range reads {
		if i := slices.IndexFunc(list, func(p parley.Read) bool { return p.UserID == r.UserID }); i >= 0 {
			r.Seq = max(list[i].Seq, r.Seq)
			list = slices.Delete(list, i, i+1)
		}
		list = append(list, r)
	}
	return list
}

// flushReads sends the room's pending read positions as one read event.
func (e *Events) flushReads(roomID string) {
	w := e.reads[roomID]
	if w == nil {
		return
	}
	w.armed = false
	if len(w.pending) == 0 {
		return
	}
	now := e.cfg.Now()
	reads, forward := w.pending, w.forward
	w.pending, w.forward, w.last = nil, nil, now
	if len(e.reads) >= e.readsAt {
		for id, o := range e.reads {
			if !o.armed && len(o.pending) == 0 && now.Sub(o.last) >= e.cfg.ReadEvery {
				delete(e.reads, id)
			}
		}
		e.readsAt = max(1024, 2*len(e.reads))
	}
	if len(forward) > 0 {
		e.cfg.OnReads(roomID, forward)
	}
	if !e.hasSubs() {
		return
	}
	members, err := e.members(roomID)
	if err != nil || len(members) > e.cfg.ReadMaxMembers {
		return
	}
	newest := reads[len(reads)-1]
	body, _ := json.Marshal(struct {
		Room  string        `json:"room"`
		Reads []parley.Read `json:"reads"`
	}{roomID, reads})
	re := &RoomEvent{ID: parley.NewID(), Kind: KindRead, RoomID: roomID, Headers: [][2]string{
		{"user", newest.UserID}, {"seq", strconv.FormatInt(newest.Seq, 10)},
	}, Body: body}
	e.toMembers(re, members, "")
}

// presenceChanged (re)starts the user's quiet period: the state is read
// and announced once no change came for PresenceQuiet. "" restarts it for
// every user announced online.
func (e *Events) presenceChanged(userID string) {
	if userID == "" {
		for u, p := range e.presence {
			if p.online {
				e.armCheck(u)
			}
		}
		return
	}
	e.armCheck(userID)
}

func (e *Events) armCheck(userID string) {
	p := e.presence[userID]
	if p == nil {
		p = &userPresence{}
		e.presence[userID] = p
	}
	if p.stop != nil {
		p.stop()
	}
	p.gen++
	gen := p.gen
	p.heard = e.heardOf(userID)
	p.stop = e.cfg.AfterFunc(e.cfg.PresenceQuiet, func() {
		e.enqueue(evItem{kind: itemCheck, user: userID, gen: gen}, false)
	})
}

// checkPresence reads the user's state at the end of a quiet period and
// announces it if it differs from the last announcement (a user never
// announced counts as offline).
func (e *Events) checkPresence(userID string, gen uint64) {
	p := e.presence[userID]
	if p == nil || p.gen != gen {
		return // a later change restarted the quiet period
	}
	p.stop = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	seen, err := e.cfg.Seen.Seen(ctx, []string{userID})
	cancel()
	if err != nil {
		e.log.Warn("events: presence", "user", userID, "err", err)
		e.m.lookupErrors.Inc()
		e.armCheck(userID) // try again after another quiet period
		return
	}
	st := seen[userID]
	e.settled(userID, st.Online, p.heard)
	if st.Online == p.online {
		if !st.Online {
			delete(e.presence, userID)
		}
		return
	}
	p.online = st.Online
	if !st.Online {
		delete(e.presence, userID)
	}
	e.announce(userID, st)
}

// announce sends online or offline to the event subscribers of every room
// of the user, and once to each personal event queue of their members.
func (e *Events) announce(userID string, st parley.Seen) {
	kind := KindOffline
	if st.Online {
		kind = KindOnline
	}
	e.m.events.WithLabelValues(kind).Inc()
	if !e.hasSubs() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	ms, err := e.cfg.Rooms.Memberships(ctx, userID)
	cancel()
	if err != nil {
		e.log.Error("events: rooms of user", "user", userID, "err", err)
		e.m.lookupErrors.Inc()
		return
	}
	type body struct {
		User       string     `json:"user"`
		Online     bool       `json:"online"`
		LastSeenAt *time.Time `json:"last_seen_at"`
	}
	b := body{User: userID, Online: st.Online}
	if !st.LastSeenAt.IsZero() {
		t := st.LastSeenAt.UTC()
		b.LastSeenAt = &t
	}
	raw, _ := json.Marshal(b)
	h := [][2]string{{"user", userID}}
	personal := map[string]bool{}
	if e.hasUserSubs() {
		for _, m := range ms {
			ids, err := e.members(m.RoomID)
			if err != nil {
				continue
			}
			for _, id := range ids {
				if id != userID {
					personal[id] = true
				}
			}
		}
	}
	n := 0
	e.mu.Lock()
	for _, m := range ms {
		subs := e.rooms[m.RoomID]
		if len(subs) == 0 {
			continue
		}
		one := []*RoomEvent{{ID: parley.NewID(), Kind: kind, RoomID: m.RoomID, Headers: h, Body: raw}}
		for _, s := range subs {
			if s.UserID != userID {
				deliverLocked(s, one)
				n++
			}
		}
	}
	if len(personal) > 0 {
		one := []*RoomEvent{{ID: parley.NewID(), Kind: kind, Headers: h, Body: raw}}
		for u := range personal {
			for _, s := range e.users[u] {
				deliverLocked(s, one)
				n++
			}
		}
	}
	e.mu.Unlock()
	e.m.fanout.Add(float64(n))
}

// Subscribe registers s: events for it are delivered from now on.
func (e *Events) Subscribe(s *EventSub) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m, key := e.rooms, s.RoomID
	if s.RoomID == "" {
		m, key = e.users, s.UserID
	}
	s.idx = len(m[key])
	s.held, s.holding, s.lost, s.floor = nil, s.Hold, false, 0
	m[key] = append(m[key], s)
	e.m.subs.Inc()
}

// Start hands a subscription registered with Hold the events held for it,
// in order, and makes it live. It is a no-op for one no longer registered.
func (e *Events) Start(s *EventSub) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.idx < 0 || !s.holding {
		return
	}
	held, lost := s.held, s.lost
	s.held, s.holding, s.lost = nil, false, false
	if lost {
		e.removeLocked(s)
		s.removed.Store(true)
		s.To.Lagged()
		return
	}
	if len(held) > 0 {
		s.To.DeliverEvents(held)
	}
}

// deliverLocked hands evs to s, or holds them until Start.
func deliverLocked(s *EventSub, evs []*RoomEvent) {
	if evs = s.filterLocked(evs); len(evs) == 0 {
		return
	}
	if !s.holding {
		s.To.DeliverEvents(evs)
		return
	}
	if len(s.held)+len(evs) > maxHeld {
		s.held, s.lost = nil, true
	}
	if !s.lost {
		s.held = append(s.held, evs...)
	}
}

// Unsubscribe removes s; a no-op if it is not registered.
func (e *Events) Unsubscribe(s *EventSub) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removeLocked(s)
}

func (e *Events) removeLocked(s *EventSub) {
	m, key := e.rooms, s.RoomID
	if s.RoomID == "" {
		m, key = e.users, s.UserID
	}
	list := m[key]
	if s.idx < 0 || s.idx >= len(list) || list[s.idx] != s {
		return
	}
	last := len(list) - 1
	list[s.idx] = list[last]
	list[s.idx].idx = s.idx
	list[last] = nil
	if last == 0 {
		delete(m, key)
	} else {
		m[key] = list[:last]
	}
	s.idx = -1
	s.held = nil
	e.m.subs.Dec()
}

// dropAll drops every subscription as lagged, after an intake overflow.
func (e *Events) dropAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all []*EventSub
	for _, l := range e.rooms {
		all = append(all, l...)
	}
	for _, l := range e.users {
		all = append(all, l...)
	}
	for _, s := range all {
		e.removeLocked(s)
		s.removed.Store(true)
		s.To.Lagged()
	}
}

func (e *Events) hasSubs() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.rooms) > 0 || len(e.users) > 0
}

func (e *Events) hasUserSubs() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.users) > 0
}

// eventMetrics are the Prometheus collectors of Events.
type eventMetrics struct {
	events       *prometheus.CounterVec
	fanout       prometheus.Counter
	subs         prometheus.Gauge
	dropped      prometheus.Counter
	absorbed     prometheus.Counter
	typingCapped prometheus.Counter
	lookupErrors prometheus.Counter
}

func newEventMetrics(reg prometheus.Registerer) eventMetrics {
	m := eventMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_room_events_total", Help: "Room events made on this node, by kind (online and offline: announced).",
		}, []string{"kind"}),
		fanout: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_fanout_total", Help: "Room events handed to local event subscriptions.",
		}),
		subs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_room_events_subscriptions", Help: "Local event subscriptions.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_dropped_total", Help: "Room events dropped because the intake queue was full (every event subscription was then dropped as lagged).",
		}),
		absorbed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_typing_absorbed_total", Help: "Typing signals absorbed by the per-user, per-room throttle.",
		}),
		typingCapped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_typing_capped_total", Help: "Typing signals dropped because their room has more members than the typing cap (or its members could not be read).",
		}),
		lookupErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_lookup_errors_total", Help: "Failed member, membership or presence lookups of room events.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.events, m.fanout, m.subs, m.dropped, m.absorbed, m.typingCapped, m.lookupErrors)
	}
	return m
}
