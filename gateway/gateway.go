package gateway

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"parley"
	"parley/hub"
	"parley/ratelimit"
	"parley/roomevents"
	"parley/stomp"

	"github.com/prometheus/client_golang/prometheus"
)

// Chat is what the gateway asks of the application service (chat.Service).
type Chat interface {
	// AuthenticateToken returns the owner of an access token and the
	// stored token (its Hash and ExpiresAt), or fails with
	// parley.CodeUnauthorized.
	AuthenticateToken(ctx context.Context, token string) (parley.User, parley.Token, error)
	// Authorize checks membership: parley.CodeNotFound for an unknown
	// room, parley.CodeForbidden for a non-member.
	Authorize(ctx context.Context, u parley.User, roomID string) (parley.Member, error)
	// Send stores a message and returns it once committed; created is
	// false for an idempotent repeat of clientID. It refuses a clientID
	// that parley.CheckClientID refuses (CodeInvalid): the gateway passes
	// the client-id header on unchecked, here and to EditMessage and
	// DeleteMessage, which refuse it alike.
	Send(ctx context.Context, u parley.User, roomID, body, clientID string) (m parley.Message, created bool, err error)
	// Messages returns a page of a room's history to a member.
	Messages(ctx context.Context, u parley.User, roomID string, p parley.Page) ([]parley.Message, error)
	// MaxBody is the largest message body, in bytes.
	MaxBody() int
	// Room returns a room's info (its LastChange for since-change).
	Room(ctx context.Context, u parley.User, roomID string) (parley.Room, error)
	// EditMessage, DeleteMessage and Changed edit, delete and list the
	// changes of a room's messages, as chat.Service does (edits.go);
	// clientID is the change's idempotency key, "" for none.
	EditMessage(ctx context.Context, u parley.User, roomID string, seq int64, body, clientID string) (parley.Message, error)
	DeleteMessage(ctx context.Context, u parley.User, roomID string, seq int64, clientID string) (parley.Message, error)
	Changed(ctx context.Context, u parley.User, roomID string, after int64, limit int) ([]parley.Message, error)
	// SendReply is Send of a reply to message replyTo of the room (0:
	// none), as chat.Service does.
	SendReply(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64) (m parley.Message, created bool, err error)
	// React adds (add) or removes u's emoji on a message, as
	// chat.Service does (reactions.go).
	React(ctx context.Context, u parley.User, roomID string, seq int64, emoji string, add bool) (parley.Message, bool, error)
	// PinMessage pins (pin) or unpins a message, as chat.Service does
	// (pins.go).
	PinMessage(ctx context.Context, u parley.User, roomID string, seq int64, pin bool) (parley.Message, bool, error)
}

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Chat runs the operations (required).
	Chat Chat
	// Hub fans committed messages out to the sessions (required).
	Hub *hub.Hub
	// AllowedOrigins lists the Origin values a browser may open /ws from,
	// as "scheme://host[:port]" or "*" for any. Empty: only the same host
	// as the request. A request without Origin (not a browser) is allowed.
	AllowedOrigins []string
	// HeartBeat is what the server offers in CONNECTED: it can send every
	// HeartBeat.Send and wants to hear from the client every
	// HeartBeat.Receive. Default 10 s, 10 s.
	HeartBeat stomp.HeartBeat
	// ConnectTimeout closes a connection that has not sent CONNECT in
	// time. Default 10 s.
	ConnectTimeout time.Duration
	// WriteTimeout bounds one socket write; a client that does not read
	// for that long is closed as a slow consumer. Default 10 s.
	WriteTimeout time.Duration
	// SendTimeout bounds the wait for a SEND's commit. Default 10 s.
	SendTimeout time.Duration
	// FrameTimeout bounds the time the server waits for the rest of a
	// frame it has begun to read, from its first wait to the frame's end,
	// whatever heart-beat the client asked for. The time the session
	// spends on an earlier frame (a SEND waiting for the store) while
	// this one's first octets sit in its buffers does not count, nor the
	// time between frames. Default 30 s.
	FrameTimeout time.Duration
	// MaxHeartBeat caps both intervals of a client's heart-beat header:
	// a larger value is taken as MaxHeartBeat, so that a client cannot
	// stretch the time the server waits before it drops a silent
	// connection (twice the negotiated interval). Default 60 s.
	MaxHeartBeat time.Duration
	// LingerTime bounds how long a session that has written its last
	// frames waits for the client to close, reading its input away, so
	// that closing does not reset the connection (see lingerClose).
	// Default 500 ms.
	LingerTime time.Duration
	// WriteDelay paces a session's writes of MESSAGE frames: a MESSAGE
	// queued within WriteDelay of the session's last write waits for the
	// rest of it, so that the messages queued meanwhile share one system
	// call; one queued after a quiet spell is written at once. Any other
	// frame (CONNECTED, RECEIPT, ERROR, a heart-beat) is written at once,
	// with whatever waits before it. Zero or less: no wait.
	WriteDelay time.Duration
	// PackWebSocket lets one WebSocket text frame carry every STOMP frame
	// of a write, one after the other, instead of one WebSocket frame
	// each: fewer WebSocket headers for the server to write and, above
	// all, for the client to parse. Only for clients whose STOMP parser
	// reads a WebSocket message as a stream of frames (stompjs, the web
	// client, parley bench do; a client that takes one message for one
	// frame loses the rest), hence off by default. Raw TCP is a stream
	// anyway.
	PackWebSocket bool
	// Writers is the number of writer goroutines that write the
	// sessions' queued frames, each session's in turn (writers.go).
	// Default GOMAXPROCS; -1: none, a goroutine of its own writes each
	// session's queue while it is not empty.
	Writers int
	// QueueFrames and QueueBytes bound a session's outbound queue.
	// Default 1024 frames, 1 MiB.
	QueueFrames int
	QueueBytes  int
	// SendBuffer is the kernel send buffer (SO_SNDBUF) of every session's
	// socket, WebSocket or TCP, in bytes (Linux doubles it for its own
	// bookkeeping). It bounds what the kernel holds for a client that
	// stops reading, so that the queue bound above finds it (ERROR slow
	// consumer) after a bounded number of frames rather than after the
	// megabytes an autotuned buffer takes. Default 64 KiB; -1 leaves the
	// system's autotuned buffer.
	SendBuffer int
	// SendRate is the sustained rate of SEND frames a user may send per
	// second, over all of the user's connections to this node, with
	// bursts of SendBurst. Default 20/s, burst 40.
	SendRate  float64
	SendBurst int
	// SendLimit, when set, counts the SEND frames instead of the per-node
	// limit of SendRate and SendBurst (cluster mode passes one shared by
	// the cluster, of the same rate); SendRate still names the rate in
	// refusals.
	SendLimit SendLimiter
	// MaxConnsPerUser bounds the authenticated connections of one user
	// on this node: a CONNECT over it gets ERROR rate_limited and the
	// connection closes. Default 32.
	MaxConnsPerUser int
	// UserConns, when set, also counts each user's connections over the
	// cluster: a CONNECT over MaxConnsPerUser connections of its user on
	// all nodes together is refused as one over the per-node limit is.
	UserConns UserConns
	// MaxConns bounds the connections of this node, authenticated or
	// not: a WebSocket upgrade over it gets 503, a TCP connection ERROR
	// unavailable then the close. Default 10,000.
	MaxConns int
	// MaxSubscriptions bounds the subscriptions of one session.
	// Default 256.
	MaxSubscriptions int
	// MaxHeaders bounds the headers of one frame from a client. Default
	// 64 (the stomp package's default).
	MaxHeaders int
	// Server is the value of the server header of CONNECTED.
	// Default "parley".
	Server string
	// Sessions, when set, hears about the sessions of authenticated users
	// (cluster mode records presence with it).
	Sessions Sessions
	// Events, when set, serves the room event destinations and typing
	// (events.go); without it they are refused as not found.
	Events *roomevents.Events
	// OnPresence, when set, hears that a user's first session on this node
	// opened or their last one closed (one node: Events.PresenceChanged).
	// It is called with no lock held and must not block.
	OnPresence func(userID string)
	// Registerer, when set, registers the gateway's metrics.
	Registerer prometheus.Registerer
	// Logger logs unexpected failures. Default slog.Default().
	Logger *slog.Logger

	// now and afterFunc, when set, replace the clock of token expiry
	// (tests drive it).
	now       func() time.Time
	afterFunc func(d time.Duration, f func()) (stop func() bool)
}

// Sessions hears about sessions: each Opened is followed by exactly one
// Closed for the same user.
type Sessions interface {
	// Opened is called once CONNECT is authenticated, before CONNECTED is
	// sent, so it completes before the client can subscribe.
	Opened(ctx context.Context, userID string)
	// Closed is called when the session of an Opened user ends.
	Closed(userID string)
}

// SendLimiter is a token bucket per user id: *ratelimit.Limiter (one
// node) and *ratelimit.Shared (cluster) are.
type SendLimiter interface {
	// Allow takes one token of key's bucket; false, with how long until
	// one is there, when it is empty.
	Allow(key string) (ok bool, retryAfter time.Duration)
}

// UserConns counts each user's connections over the cluster.
type UserConns interface {
	// Acquire counts session, a new connection of userID, unless the
	// user has max connections already (false). It returns within a
	// short bound of its own, true when it cannot tell.
	Acquire(ctx context.Context, userID, session string, max int) bool
	// Release stops counting a connection Acquire counted; it must not
	// block.
	Release(userID, session string)
}

func (c *Config) setDefaults() {
	if c.HeartBeat == (stomp.HeartBeat{}) {
		c.HeartBeat = stomp.HeartBeat{Send: 10 * time.Second, Receive: 10 * time.Second}
	}
	def := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	def(&c.ConnectTimeout, 10*time.Second)
	def(&c.WriteTimeout, 10*time.Second)
	def(&c.FrameTimeout, 30*time.Second)
	def(&c.MaxHeartBeat, 60*time.Second)
	def(&c.SendTimeout, 10*time.Second)
	def(&c.LingerTime, 500*time.Millisecond)
	if c.Writers == 0 {
		c.Writers = runtime.GOMAXPROCS(0)
	}
	if c.QueueFrames <= 0 {
		c.QueueFrames = 1024
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = 1 << 20
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = 64 << 10
	}
	if c.SendRate <= 0 {
		c.SendRate = 20
	}
	if c.SendBurst <= 0 {
		c.SendBurst = 40
	}
	if c.MaxConnsPerUser <= 0 {
		c.MaxConnsPerUser = 32
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 10000
	}
	if c.MaxSubscriptions <= 0 {
		c.MaxSubscriptions = 256
	}
	if c.Server == "" {
		c.Server = "parley"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Server runs STOMP sessions. It is an http.Handler for the WebSocket
// endpoint; Serve runs it on a TCP listener. Stop it with Shutdown.
type Server struct {
	cfg  Config
	chat Chat
	hub  *hub.Hub
	log  *slog.Logger
	m    *metrics
	poll *poller
	// writers writes the sessions' queues (nil: Config.Writers < 0).
	writers *writerPool
	limits  stomp.Limits
	ctx     context.Context // cancelled when Shutdown begins: ends catch-ups, CONNECT and SUBSCRIBE checks
	cancel  context.CancelFunc
	// sendCtx is the parent of every SEND's context. Shutdown cancels it
	// (abortSends) only when its own ctx ends, so that sends in flight
	// can finish and be answered with their RECEIPT.
	sendCtx    context.Context
	abortSends context.CancelFunc
	// forced is set when Shutdown's ctx has ended: writes no longer wait
	// for a client to read (see session.write).
	forced atomic.Bool

	tcpReaders sync.Pool // *readState for raw TCP
	wsReaders  sync.Pool // *readState for WebSocket

	// now and afterFunc are the clock of token expiry and of sendLimit;
	// tests replace them.
	now       func() time.Time
	afterFunc func(d time.Duration, f func()) (stop func() bool)
	// sendLimit is the SEND budget of each user, by user id, shared by
	// the user's connections.
	sendLimit SendLimiter

	mu        sync.Mutex // guards the following fields
	sessions  map[*session]struct{}
	listeners map[net.Listener]struct{}
	shutdown  bool
	drained   chan struct{} // closed when sessions empties during shutdown

	// users holds the authenticated sessions of each user, with the hash
	// of the token each was opened with (see users.go).
	users map[string]map[*session][]byte
	// lastSeen is when each user's last session on this node closed
	// (seen.go).
	lastSeen map[string]time.Time
	// revocations counts Revoke calls, so that a CONNECT that raced with
	// one checks its token again (see register).
	revocations uint64
	// overCap counts the sessions in sessions that were refused for the
	// node's MaxConns and are writing their ERROR (see add).
	overCap int
	// closedCalls counts the Sessions.Closed calls under way, which
	// Shutdown waits for; closedIdle, when set, is closed when it drops
	// to zero (see closedcalls.go).
	closedCalls int
	closedIdle  chan struct{}
}

// New returns a Server. It fails if the readiness poller cannot start.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	p, err := newPoller()
	if err != nil {
		return nil, err
	}
	srv := &Server{
		cfg:       cfg,
		chat:      cfg.Chat,
		hub:       cfg.Hub,
		log:       cfg.Logger,
		poll:      p,
		sessions:  map[*session]struct{}{},
		users:     map[string]map[*session][]byte{},
		lastSeen:  map[string]time.Time{},
		listeners: map[net.Listener]struct{}{},
		now:       time.Now,
		afterFunc: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
		// A frame carries at most a body of MaxBody plus its headers.
		limits: stomp.Limits{MaxBody: cfg.Chat.MaxBody(), MaxFrame: cfg.Chat.MaxBody() + 16<<10, MaxHeaders: cfg.MaxHeaders},
	}
	srv.m = newMetrics(cfg.Registerer, srv.queuedFrames)
	if cfg.now != nil {
		srv.now = cfg.now
	}
	if cfg.afterFunc != nil {
		srv.afterFunc = cfg.afterFunc
	}
	srv.sendLimit = cfg.SendLimit
	if srv.sendLimit == nil {
		srv.sendLimit = ratelimit.New(ratelimit.Config{Rate: cfg.SendRate, Burst: cfg.SendBurst, Now: srv.now})
	}
	srv.ctx, srv.cancel = context.WithCancel(context.Background())
	srv.sendCtx, srv.abortSends = context.WithCancel(context.Background())
	go p.run()
	if cfg.Writers > 0 {
		srv.writers = newWriterPool(cfg.Writers)
	}
	return srv, nil
}

// goingAway is the refusal of every session that Shutdown ends.
var goingAway = parley.Errorf(parley.CodeUnavailable, "the server is shutting down: reconnect and resume with since-seq")

// Shutdown stops accepting, lets every frame being handled finish (a SEND
// gets its RECEIPT once committed), then sends every session, after what
// is queued for it, an ERROR telling it to reconnect, and waits until the
// sessions are closed. If ctx ends first, the sends still waiting are
// refused as unavailable (send again with the same client-id), the
// remaining sessions are closed without waiting for their clients to read,
// and Shutdown returns ctx's error. Either way it waits for the
// sessions' Sessions.Closed calls to return, then stops the poller. The
// package comment describes the sequence.
func (srv *Server) Shutdown(ctx context.Context) error {
	srv.mu.Lock()
	srv.shutdown = true
	for ln := range srv.listeners {
		ln.Close()
	}
	sessions := make([]*session, 0, len(srv.sessions))
	for s := range srv.sessions {
		sessions = append(sessions, s)
	}
	if srv.drained == nil {
		srv.drained = make(chan struct{})
		if len(srv.sessions) == 0 {
			close(srv.drained)
		}
	}
	drained := srv.drained
	srv.mu.Unlock()
	srv.cancel()

	// Every session stops taking frames before any is refused.
	idle := make([]*session, 0, len(sessions))
	for _, s := range sessions {
		if !s.drain() {
			idle = append(idle, s)
		}
	}
	for _, s := range idle {
		s.refuse(goingAway, nil)
	}
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = ctx.Err()
		srv.force(sessions)
		<-drained
	}
	// The sessions' last Sessions.Closed calls may use what the caller
	// closes once Shutdown returns (cluster mode's Redis client).
	srv.awaitClosedCalls()
	srv.poll.close()
	if srv.writers != nil {
		srv.writers.close()
	}
	return err
}

// force ends a Shutdown whose ctx has ended: sends still waiting are
// cancelled (their handlers refuse them as unavailable and close), and
// writes stop waiting for clients, including a write blocked now, so that
// every session closes promptly.
func (srv *Server) force(sessions []*session) {
	srv.forced.Store(true)
	for _, s := range sessions {
		s.interruptWrite()
	}
	srv.abortSends()
}

// maxOverCap bounds the sessions refused for MaxConns that may be writing
// their ERROR at once; past it, a connection over the cap is closed with
// no ERROR, so that a flood costs no more than that.
const maxOverCap = 256

// add registers a new session; it fails after Shutdown. Over MaxConns it
// registers the session as over the cap (overCap true: the caller refuses
// it), or fails when maxOverCap of those are still being refused.
func (srv *Server) add(s *session) (overCap, ok bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.shutdown {
		return false, false
	}
	if len(srv.sessions)-srv.overCap >= srv.cfg.MaxConns {
		srv.m.connRefusals[refusedNodeLimit].Inc()
		if srv.overCap >= maxOverCap {
			return false, false
		}
		srv.overCap++
		s.overCap = true
	}
	srv.sessions[s] = struct{}{}
	srv.m.connections.Inc()
	return s.overCap, true
}

// queuedFrames counts the frames in the outbound queues of every session,
// those being written included: the sum of the sessions' own counts
// (session.queued), so that queuing a frame touches no counter that every
// session shares. It takes each session's lock after Server.mu is
// released (Server.mu is a leaf).
func (srv *Server) queuedFrames() int64 {
	srv.mu.Lock()
	ss := make([]*session, 0, len(srv.sessions))
	for s := range srv.sessions {
		ss = append(ss, s)
	}
	srv.mu.Unlock()
	var n int64
	for _, s := range ss {
		s.mu.Lock()
		n += int64(s.queued)
		s.mu.Unlock()
	}
	return n
}

// remove forgets a closed session.
func (srv *Server) remove(s *session) {
	user, last := srv.removeSession(s)
	if user != "" && srv.cfg.UserConns != nil {
		srv.cfg.UserConns.Release(user, s.id)
	}
	if last && srv.cfg.OnPresence != nil {
		srv.cfg.OnPresence(user)
	}
}

// removeSession is remove under srv.mu; last reports that it was user's
// last session.
func (srv *Server) removeSession(s *session) (user string, last bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if _, ok := srv.sessions[s]; !ok {
		return "", false
	}
	delete(srv.sessions, s)
	user, last = srv.unregisterLocked(s)
	if s.overCap {
		srv.overCap--
	}
	srv.m.connections.Dec()
	if srv.drained != nil && len(srv.sessions) == 0 {
		close(srv.drained)
	}
	return user, last
}

// ServeHTTP upgrades a request to a WebSocket STOMP session. A foreign
// Origin gets 403; a request during shutdown gets 503.
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	srv.serveWebSocket(w, r)
}
