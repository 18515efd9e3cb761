package rest

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"parley"
	"parley/chat"
	"parley/webhook"

	"github.com/prometheus/client_golang/prometheus"
)

// Chat is what the handlers need of the chat service (*chat.Service
// implements it): exactly the operations the routes call.
type Chat interface {
	// Register creates an account: parley.CodeInvalid for a bad name or
	// password, parley.CodeNameTaken for a name in use.
	Register(ctx context.Context, name, password string) (parley.User, error)
	// Login checks a name and password and returns a new access token,
	// or fails with parley.CodeUnauthorized, the same for an unknown name
	// as for a wrong password.
	Login(ctx context.Context, name, password string) (token string, u parley.User, err error)
	// Authenticate returns the owner of an unexpired access token, or
	// fails with parley.CodeUnauthorized.
	Authenticate(ctx context.Context, token string) (parley.User, error)
	// AuthenticateToken is Authenticate that also returns the token: for
	// an API key, its Key (apikeys.go).
	AuthenticateToken(ctx context.Context, token string) (parley.User, parley.Token, error)
	// Logout revokes an access token (parley.CodeUnauthorized for one that
	// does not work); LogoutAll revokes every token of the user.
	Logout(ctx context.Context, token string) error
	LogoutAll(ctx context.Context, userID string) error
	// UserByName finds a user by name, or fails with parley.CodeNotFound.
	UserByName(ctx context.Context, name string) (parley.User, error)
	// CreateRoom creates a group room with u as its first member, or
	// returns the direct room of u and the peer (created false when it
	// existed already).
	CreateRoom(ctx context.Context, u parley.User, r chat.NewRoom) (room parley.Room, created bool, err error)
	// Room, Join and Leave read, join and leave a room; a direct room of
	// others reads as an unknown one (parley.CodeNotFound).
	Room(ctx context.Context, u parley.User, roomID string) (parley.Room, error)
	Join(ctx context.Context, u parley.User, roomID string) (room parley.Room, joined bool, err error)
	Leave(ctx context.Context, u parley.User, roomID string) error
	// Rooms returns a page of u's room list and the cursor of the next.
	Rooms(ctx context.Context, u parley.User, cursor string, limit int) (rooms []parley.RoomEntry, next string, err error)
	// Messages returns a page of a room's history to a member.
	Messages(ctx context.Context, u parley.User, roomID string, p parley.Page) ([]parley.Message, error)
	// Send stores a message from a member; created is false for an
	// idempotent repeat of clientID.
	Send(ctx context.Context, u parley.User, roomID, body, clientID string) (m parley.Message, created bool, err error)
	// MarkRead moves a member's read position forward to seq and reports
	// whether it moved.
	MarkRead(ctx context.Context, u parley.User, roomID string, seq int64) (moved bool, err error)
	// Peer returns the other member of a direct room; nil for a group
	// room or when it cannot be read.
	Peer(ctx context.Context, u parley.User, r parley.Room) *parley.User
	// MaxBody is the largest message body, in bytes.
	MaxBody() int
	// Changes are the edits and deletions (edits.go).
	Changes
	// Searcher is the searches (search.go).
	Searcher
	// Reactions are the reactions, Threads the replies (reactions.go).
	Reactions
	Threads
	// Pins are the pinned messages (pins.go).
	Pins
	// Notifications are the notification levels (mentions.go).
	Notifications

	// People and moderation (chat/people.go): to anyone but a member the
	// room is unknown (parley.CodeNotFound); a member without the role,
	// and any moderation of a direct room, get parley.CodeForbidden.
	//
	// Members returns a page of the room's members, online first, then by
	// name, and the cursor of the next.
	Members(ctx context.Context, u parley.User, roomID, cursor string, limit int) ([]chat.MemberEntry, string, error)
	// UpdateRoom changes a room's title and/or capacity (owner or admin);
	// a capacity below member_count is parley.CodeConflict.
	UpdateRoom(ctx context.Context, u parley.User, roomID string, up chat.RoomUpdate) (parley.Room, error)
	// AddMember adds a user to a group room (owner or admin).
	AddMember(ctx context.Context, u parley.User, roomID, userID string) (chat.MemberEntry, bool, error)
	// SetRole makes a member an admin or a member (owner only).
	SetRole(ctx context.Context, u parley.User, roomID, userID, role string) (chat.MemberEntry, error)
	// Remove removes a member, banning with ban (owner, or an admin
	// removing a plain member); Unban lifts a ban and Bans lists them
	// (owner or admin).
	Remove(ctx context.Context, u parley.User, roomID, userID string, ban bool) error
	Unban(ctx context.Context, u parley.User, roomID, userID string) error
	Bans(ctx context.Context, u parley.User, roomID string) ([]parley.Ban, error)
}

// Limiter is a token bucket per key (a user id, an address):
// *ratelimit.Limiter counts on one node, *ratelimit.Shared over a
// cluster.
type Limiter interface {
	// Allow takes one token of key's bucket; false, with how long until
	// one is there, when it is empty.
	Allow(key string) (ok bool, retryAfter time.Duration)
	// Rate and Burst are the budget of each key, for refusals.
	Rate() float64
	Burst() int
	// Len is the keys the limiter holds an entry for, for metrics.
	Len() int
}

// Config configures a Handler. Zero fields take the documented defaults.
type Config struct {
	// Chat runs the operations (required).
	Chat Chat
	// MaxRequestBytes caps a request body. Default: room for a maximal
	// message body with every byte JSON-escaped, at least 64 KiB.
	MaxRequestBytes int64
	// SendLimit, when set, limits each user's message sends and room
	// creations together (see limited); a refusal is 429 rate_limited
	// with Retry-After. Nil: no limit.
	SendLimit Limiter
	// ReadLimit, when set, limits each user's read marks (PUT
	// .../read) that move no read position (see markRead); a refusal
	// is 429 rate_limited with Retry-After. Nil: no limit.
	ReadLimit Limiter
	// Webhooks, when set, keeps the outgoing webhooks that the admin's
	// routes manage (webhooks.go); HookFilter checks their URLs (nil:
	// webhook.NewFilter(nil), internal addresses refused).
	Webhooks   WebhookAdmin
	HookFilter *webhook.Filter
	// KeyLimit, when set, limits each API key's calls (every route, the
	// incoming webhook included), by key, before any other limit: a
	// refusal is 429 rate_limited with Retry-After, and the audit line
	// says so. Nil: no limit.
	KeyLimit Limiter
	// SignupLimit, when set, limits account creations per client address
	// (see login.go); a refusal is 429 rate_limited with Retry-After.
	// Nil: no limit.
	SignupLimit Limiter
	// LoginByAddress and LoginByName, when set, slow down failed logins
	// per client address and per name (see login.go); LoginByName also
	// sets and honours device cookies. Nil: no limit.
	LoginByAddress, LoginByName FailureLimit
	// LoginConcurrency bounds the logins of the node checking a password
	// at once (each hashes it). Default: twice GOMAXPROCS.
	LoginConcurrency int
	// LoginWait is how long a login may wait in line for its turn to
	// check a password (its limits' room, then a LoginConcurrency slot)
	// before it is answered 503 unavailable "server busy". Default
	// DefaultLoginWait.
	LoginWait time.Duration
	// DeviceKey signs device cookies. Nodes that share it honour each
	// other's cookies. Default: random, so a restart forgets them.
	DeviceKey []byte
	// Now is the clock of device cookies. Default time.Now.
	Now func() time.Time
	// TrustedProxies are the peers whose X-Forwarded-For is believed
	// when telling a client's address (see clientAddr). Empty: the
	// socket peer is the client.
	TrustedProxies []netip.Prefix
	// OIDC, when set, is OpenID Connect sign-in (oidc.go).
	OIDC *OIDC
	// NoPasswords turns password sign-in off: sign-up and password login
	// are 403 forbidden (GET /api/config tells clients).
	NoPasswords bool
	// Registerer, when set, registers the HTTP metrics.
	Registerer prometheus.Registerer
	// Files, when set, serves uploads and downloads (files.go) and
	// sends with files; nil: they answer 503 unavailable.
	Files FileService
}

// Handler serves the routes under /api/.
type Handler struct {
	chat       Chat
	files      FileService // nil: no files
	maxBytes   int64
	sendLimit  Limiter         // nil: no limit
	readLimit  Limiter         // read marks that move nothing; nil: no limit
	keyLimit   Limiter         // calls per API key; nil: no limit
	webhooks   WebhookAdmin    // nil: no webhooks here
	hookFilter *webhook.Filter // checks a new webhook's URL
	trusted    []netip.Prefix  // proxies whose X-Forwarded-For is believed

	signupLimit   Limiter          // nil: no limit
	loginByAddr   FailureLimit     // nil: no limit
	loginByName   FailureLimit     // nil: no limit, and no device cookies
	loginSlots    chan struct{}    // one token per password check running; capacity LoginConcurrency
	loginWait     time.Duration    // the longest wait in line for a check
	loginsWaiting prometheus.Gauge // logins in beginLogin
	deviceKey     []byte
	now           func() time.Time
	mux           *http.ServeMux
	// roomListRoute and messagesRoute are the routes of roomListPattern
	// and messagesPattern, which ServeHTTP calls without asking mux.
	roomListRoute, messagesRoute http.HandlerFunc
	memo                         memo     // of the room lists and history pages last sent
	patterns                     []string // of every route, in the order registered

	oidc        *OIDC // nil: no OpenID Connect sign-in
	noPasswords bool

	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	limitedTotal *prometheus.CounterVec
	oidcLogins   *prometheus.CounterVec
}

// New returns a Handler.
func New(cfg Config) *Handler {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = max(64<<10, int64(cfg.Chat.MaxBody())*6+1024)
	}
	if cfg.HookFilter == nil {
		cfg.HookFilter, _ = webhook.NewFilter(nil) // nothing to parse: no error
	}
	if cfg.DeviceKey == nil {
		cfg.DeviceKey = make([]byte, 32)
		rand.Read(cfg.DeviceKey)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LoginConcurrency <= 0 {
		cfg.LoginConcurrency = 2 * runtime.GOMAXPROCS(0)
	}
	if cfg.LoginWait <= 0 {
		cfg.LoginWait = DefaultLoginWait
	}
	h := &Handler{
		chat:        cfg.Chat,
		files:       cfg.Files,
		maxBytes:    cfg.MaxRequestBytes,
		sendLimit:   cfg.SendLimit,
		readLimit:   cfg.ReadLimit,
		keyLimit:    cfg.KeyLimit,
		webhooks:    cfg.Webhooks,
		hookFilter:  cfg.HookFilter,
		trusted:     cfg.TrustedProxies,
		signupLimit: cfg.SignupLimit,
		loginByAddr: cfg.LoginByAddress,
		loginByName: cfg.LoginByName,
		loginSlots:  make(chan struct{}, cfg.LoginConcurrency),
		loginWait:   cfg.LoginWait,
		loginsWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_http_logins_waiting",
			Help: "Logins waiting in line for their turn to check a password (their limits' room, then a slot of the node).",
		}),
		deviceKey:   cfg.DeviceKey,
		now:         cfg.Now,
		oidc:        cfg.OIDC,
		noPasswords: cfg.NoPasswords,
		oidcLogins:  newOIDCCounter(),
		mux:         http.NewServeMux(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_http_requests_total",
			Help: "HTTP API requests by route and status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_http_request_duration_seconds",
			Help:    "HTTP API request latency by route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		limitedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_http_limited_total",
			Help: "Sign-ups and logins refused with 429 by the per-address, per-name and per-device limits, and logins refused with 503 after their wait in line (login_busy), by limit.",
		}, []string{"limit"}),
	}
	for _, l := range limitReasons {
		h.limitedTotal.WithLabelValues(l)
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(h.requests, h.latency, h.limitedTotal, h.loginsWaiting)
		if cfg.OIDC != nil {
			cfg.Registerer.MustRegister(h.oidcLogins)
		}
		if l := cfg.SignupLimit; l != nil {
			cfg.Registerer.MustRegister(gauge("parley_http_signup_limit_addresses",
				"Addresses the sign-up limit holds a bucket for: those that signed up in the last few minutes.", l.Len))
		}
		if l, ok := cfg.LoginByAddress.(interface{ Len() int }); ok {
			cfg.Registerer.MustRegister(gauge("parley_http_login_failing_addresses",
				"Addresses with failed logins on record, not yet forgiven, or logins in flight, on this node.", l.Len))
		}
		if l, ok := cfg.LoginByName.(interface{ Len() int }); ok {
			cfg.Registerer.MustRegister(gauge("parley_http_login_failing_names",
				"Names and device cookies with failed logins on record, not yet forgiven, or logins in flight, on this node.", l.Len))
		}
		if l := cfg.SendLimit; l != nil {
			cfg.Registerer.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "parley_http_send_limit_users",
				Help: "Users the REST send limit holds a bucket for: those that sent or created a room in the last few seconds.",
			}, func() float64 { return float64(l.Len()) }))
		}
	}
	h.routes()
	return h
}

func (h *Handler) routes() {
	h.handle("POST /api/users", h.register)
	h.handle("POST /api/tokens", h.login)
	h.handle("DELETE /api/tokens/current", h.authed(h.logout))
	h.handle("DELETE /api/tokens", h.authed(h.logoutAll))
	h.handle("GET /api/users/{name}", h.authed(h.userByName))
	h.handle("GET /api/me", h.authed(h.me))
	h.handle("GET /api/me/export", h.authed(h.exportMe))
	h.handle("DELETE /api/me", h.authed(h.deleteMe))
	h.handle(roomListPattern, h.authedUser(h.myRooms))
	h.handle("POST /api/rooms", h.authed(h.limited(h.createRoom)))
	h.handle("GET /api/rooms/{id}", h.authed(h.room))
	h.handle("POST /api/rooms/{id}/members", h.authed(h.join))
	h.handle("DELETE /api/rooms/{id}/members/me", h.authed(h.leave))
	h.handle(messagesPattern, h.authedUser(h.messages))
	h.handle("POST /api/rooms/{id}/messages", h.authed(h.limited(h.send)))
	h.handle("POST /api/hooks/{key}", h.hook) // apikeys.go
	h.handle("PUT /api/rooms/{id}/read", h.authed(h.markRead))
	h.changeRoutes()
	h.reactionRoutes() // reactions.go
	h.pinRoutes()      // pins.go
	h.fileRoutes()     // files.go
	h.mentionRoutes()  // mentions.go
	// People and moderation (people.go).
	h.handle("GET /api/rooms/{id}/members", h.authed(h.members))
	h.handle("PATCH /api/rooms/{id}", h.authed(h.updateRoom))
	h.handle("POST /api/rooms/{id}/members/{user_id}", h.authed(h.addMember))
	h.handle("PUT /api/rooms/{id}/members/{user_id}", h.authed(h.setRole))
	h.handle("DELETE /api/rooms/{id}/members/{user_id}", h.authed(h.removeMember))
	h.handle("GET /api/rooms/{id}/bans", h.authed(h.bans))
	h.handle("DELETE /api/rooms/{id}/bans/{user_id}", h.authed(h.unban))
	h.oidcRoutes()    // oidc.go
	h.webhookRoutes() // webhooks.go
	h.handle("GET /api/config", h.clientConfig)
	h.handle("GET /api/openapi.yaml", h.openAPI)
	h.handle(catchAll, h.noRoute)
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The room list and history pages, the hottest routes, without the
	// mux's lookup: a clean path with nothing escaped is the one the mux
	// would match them by. The room list has no path values; a history
	// page's room id is read from the path again by pathRoomID (setting
	// it as a path value would allocate a map).
	if r.Method == http.MethodGet && r.URL.RawPath == "" {
		if r.URL.Path == roomListPath && h.roomListRoute != nil {
			r.Pattern = roomListPattern // as the mux sets it
			h.roomListRoute(w, r)
			return
		}
		if _, ok := messagesPathID(r.URL.Path); ok && h.messagesRoute != nil {
			r.Pattern = messagesPattern
			h.messagesRoute(w, r)
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

const (
	roomListPath    = "/api/me/rooms"
	roomListPattern = "GET " + roomListPath
	messagesPattern = "GET /api/rooms/{id}/messages"
)

// messagesPathID returns the {id} of messagesPattern in a path the mux
// would route there unchanged: a clean one (no empty, "." or ".."
// segment, which the mux would redirect) whose id is one segment.
func messagesPathID(path string) (string, bool) {
	const prefix, suffix = "/api/rooms/", "/messages"
	if len(path) <= len(prefix)+len(suffix) || path[:len(prefix)] != prefix || path[len(path)-len(suffix):] != suffix {
		return "", false
	}
	id := path[len(prefix) : len(path)-len(suffix)]
	if id == "." || id == ".." || strings.IndexByte(id, '/') >= 0 {
		return "", false
	}
	return id, true
}

// pathRoomID returns the {id} of a request to messagesPattern: its path
// value when the mux routed it, else (ServeHTTP's direct call) the id in
// its path.
func pathRoomID(r *http.Request) string {
	if id := r.PathValue("id"); id != "" {
		return id
	}
	id, _ := messagesPathID(r.URL.Path)
	return id
}

// handlerFunc is a route that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle registers a route with error writing and metrics.
func (h *Handler) handle(pattern string, f handlerFunc) {
	requests := &routeCounters{vec: h.requests.MustCurryWith(prometheus.Labels{"route": pattern})}
	latency := h.latency.WithLabelValues(pattern)
	h.patterns = append(h.patterns, pattern)
	route := func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &requestState{statusWriter: statusWriter{ResponseWriter: w}}
		st.rid[0] = requestID(r)
		w.Header()["X-Request-Id"] = st.rid[:]
		if err := f(&st.statusWriter, r); err != nil {
			if st.code != 0 {
				// The answer has begun: its status is on its way, so
				// no error response can follow it.
				logCut(r, st.rid[0], pattern, err)
			} else {
				logError(r, st.rid[0], pattern, err)
				writeError(&st.statusWriter, err)
			}
		}
		requests.of(st.status()).Inc()
		latency.Observe(time.Since(start).Seconds())
	}
	h.mux.HandleFunc(pattern, route)
	switch pattern {
	case roomListPattern:
		h.roomListRoute = route
	case messagesPattern:
		h.messagesRoute = route
	}
}

// requestState is what handle keeps of a request, in one allocation.
type requestState struct {
	statusWriter
	rid [1]string // the X-Request-Id header's value
}

// routeCounters are a route's parley_http_requests_total children, those
// of the usual statuses looked up once (on first use, so that a status
// never answered has no series).
type routeCounters struct {
	vec    *prometheus.CounterVec // curried with the route
	common [len(commonStatuses)]atomic.Pointer[prometheus.Counter]
}

var commonStatuses = [...]int{200, 201, 204, 400, 401, 403, 404, 405, 409, 413, 429, 500, 503}

func (c *routeCounters) of(status int) prometheus.Counter {
	i := slices.Index(commonStatuses[:], status)
	if i < 0 {
		return c.vec.WithLabelValues(strconv.Itoa(status))
	}
	if p := c.common[i].Load(); p != nil {
		return *p
	}
	ctr := c.vec.WithLabelValues(strconv.Itoa(status))
	c.common[i].Store(&ctr)
	return ctr
}

type userKey struct{}

// authed wraps a route that needs a valid bearer token.
func (h *Handler) authed(f handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		u, err := h.authenticate(w, r)
		if err != nil {
			return err
		}
		return f(w, r.WithContext(&userContext{Context: r.Context(), u: u}))
	}
}

// userContext is a request's context with its authenticated user: what
// context.WithValue would make, in one allocation instead of two.
type userContext struct {
	context.Context
	u parley.User
}

func (c *userContext) Value(key any) any {
	if key == (userKey{}) {
		return &c.u
	}
	return c.Context.Value(key)
}

// authedUser is authed for the hottest routes, which take the user as an
// argument: no copy of the request with a new context.
func (h *Handler) authedUser(f func(w http.ResponseWriter, r *http.Request, u parley.User) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		u, err := h.authenticate(w, r)
		if err != nil {
			return err
		}
		return f(w, r, u)
	}
}

// authenticate checks the request's bearer token and returns its owner.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (parley.User, error) {
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="parley"`)
		return parley.User{}, parley.Errorf(parley.CodeUnauthorized, "missing or malformed Authorization: Bearer header")
	}
	if parley.IsAPIKey(token) {
		return h.authenticateKey(w, r, token)
	}
	u, err := h.chat.Authenticate(r.Context(), token)
	if err != nil {
		if parley.ErrorCode(err) == parley.CodeUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="parley", error="invalid_token"`)
		}
		return parley.User{}, err
	}
	return u, nil
}

// userOf returns the authenticated user of a request that passed authed.
func userOf(r *http.Request) parley.User { return *r.Context().Value(userKey{}).(*parley.User) }

func bearer(h string) (string, bool) {
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return h[len(prefix):], true
}

// statusWriter remembers the status written, for metrics.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the writer underneath, for http.ResponseController
// (decode moves the read deadline through it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// gauge is a gauge that reads n.
func gauge(name, help string, n func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(n()) })
}
