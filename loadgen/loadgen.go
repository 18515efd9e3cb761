package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"
)

// Scenario names a load scenario.
type Scenario string

// The scenarios, after design §7.
const (
	Direct      Scenario = "direct"      // seed 000: 1:1 rooms, send → peer receives
	RoomList    Scenario = "roomlist"    // seed 001: room list in a loop
	History     Scenario = "history"     // seed 001: paging older messages
	Group       Scenario = "group"       // seed 002: one big room, everyone sends
	Seats       Scenario = "seats"       // seed 003: concurrent joins of a limited room
	Open        Scenario = "open"        // seed 004: room info + last message
	Connections Scenario = "connections" // idle subscribed connections, RSS per connection
	BigRoom     Scenario = "bigroom"     // one room of 10,000 members, a few senders (bigroom.go)
	Search      Scenario = "search"      // users searching their rooms over a large history
)

// Scenarios lists every scenario, in the order of the seeds.
var Scenarios = []Scenario{Direct, RoomList, History, Group, Seats, Open, Connections, BigRoom, Search}

// Targets: the server under test.
const (
	TargetParley   = "parley"             // Parley: REST set-up, STOMP on /ws
	TargetRabbitMQ = "rabbitmq-web-stomp" // RabbitMQ Web-STOMP: /topic destinations, login/passcode
)

// Options shape a run. Zero fields take the scenario's defaults (see
// Defaults), except URLs, which must be given.
type Options struct {
	// Target is TargetParley (default) or TargetRabbitMQ.
	Target string
	// URLs are the nodes to drive; users are spread over them round-robin.
	// Parley: http://host:port. RabbitMQ: ws://host:15674/ws.
	URLs []string

	Users       int           // concurrent virtual users (JMeter threads)
	Loops       int           // operations per user (requests, messages, join rounds)
	RampUp      time.Duration // users start spread evenly over this time
	Duration    time.Duration // the measurement stops after this time, loops done or not
	MinInterval time.Duration // messaging: each user sends every MinInterval..MaxInterval (uniform)
	MaxInterval time.Duration //   (zero both for direct: send the next message when the last is receipted)
	Payload     int           // message body size in bytes
	Rooms       int           // roomlist: rooms each user is a member of; search: rooms in all
	HistorySize int           // history, roomlist, open: messages seeded per room
	PageSize    int           // history, roomlist: page size
	Seats       int           // seats: capacity of each room (the creator holds one seat)
	Conns       int           // connections: connections to open

	// Room events (group, Parley only): every member also subscribes to
	// the room's events; Typing > 0 sends a typing signal every Typing
	// (random phase); ReadAfterSend PUTs the member's read position (the
	// newest seq it received) after each of its messages is receipted.
	Events        bool
	Typing        time.Duration
	ReadAfterSend bool

	SetupConcurrency int           // sign-ups and other set-up requests in flight
	Timeout          time.Duration // one request or receipt
	Drain            time.Duration // messaging: how long to wait for deliveries after the last send

	Login, Passcode string // RabbitMQ credentials (default guest/guest)
	Secret          string // Centrifugo: HMAC key of connection tokens (client.token.hmac_secret_key)

	// BigRoom (bigroom.go): Senders of the Users members send; a delivery
	// later than Late counts as late; each account opens
	// SessionsPerUser of the members' sessions (a faster set-up).
	Senders         int
	Late            time.Duration
	SessionsPerUser int

	// ServerPID, when set, is a local server process whose CPU use is
	// reported (Linux), for targets without Parley's /metrics.
	ServerPID int

	// Progress, when set, is called about five times a second from one
	// goroutine while the run lasts.
	Progress func(Progress)
}

// Defaults returns the options of a scenario at the size of its seed.
func Defaults(s Scenario) Options {
	o := Options{
		Target: TargetParley, Users: 100, Loops: 10000, Duration: 10 * time.Second,
		Payload: 100, Rooms: 10, HistorySize: 20, PageSize: 50,
		SetupConcurrency: 16, Timeout: 30 * time.Second, Drain: 10 * time.Second,
		Login: "guest", Passcode: "guest",
	}
	switch s {
	case Direct:
		o.Users, o.Loops, o.RampUp, o.Duration = 100, 10, 10*time.Second, time.Minute
	case RoomList:
		o.Users = 300
	case History:
		o.Users, o.HistorySize = 700, 1000
	case Group:
		o.Users, o.Duration = 250, 30*time.Second
		o.MinInterval, o.MaxInterval = time.Second, 3*time.Second
	case Seats:
		o.Users, o.Loops = 1000, 1
	case Open:
		o.Users = 16
	case Connections:
		o.Users, o.Conns, o.Duration = 100, 1000, 5*time.Second
	case BigRoom:
		o.Users, o.Duration = 10000, 30*time.Second
		o.MinInterval, o.MaxInterval = time.Second, time.Second
	case Search:
		o.Users, o.Rooms, o.HistorySize, o.PageSize, o.Payload = 100, 1000, 1000, 20, 60
	}
	o.Senders, o.Late, o.SessionsPerUser = 20, time.Second, 1
	if o.Seats == 0 {
		o.Seats = o.Users / 2
	}
	return o
}

func (o Options) withDefaults(s Scenario) Options {
	d := Defaults(s)
	if o.Target == "" {
		o.Target = d.Target
	}
	setInt := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	setInt(&o.Users, d.Users)
	setInt(&o.Loops, d.Loops)
	setDur(&o.Duration, d.Duration)
	setInt(&o.Payload, d.Payload)
	setInt(&o.Rooms, d.Rooms)
	setInt(&o.HistorySize, d.HistorySize)
	setInt(&o.PageSize, d.PageSize)
	setInt(&o.Seats, max(o.Users/2, 2))
	setInt(&o.Conns, d.Conns)
	setInt(&o.SetupConcurrency, d.SetupConcurrency)
	setDur(&o.Timeout, d.Timeout)
	setDur(&o.Drain, d.Drain)
	setInt(&o.Senders, d.Senders)
	setDur(&o.Late, d.Late)
	setInt(&o.SessionsPerUser, d.SessionsPerUser)
	if o.MinInterval <= 0 && o.MaxInterval <= 0 {
		o.MinInterval, o.MaxInterval = d.MinInterval, d.MaxInterval
	}
	if o.MaxInterval < o.MinInterval {
		o.MaxInterval = o.MinInterval
	}
	if o.Login == "" {
		o.Login, o.Passcode = d.Login, d.Passcode
	}
	return o
}

// validate checks the options and the target URLs.
func (o Options) validate(s Scenario) error {
	known := false
	for _, k := range Scenarios {
		known = known || k == s
	}
	if !known {
		return fmt.Errorf("unknown scenario %q", s)
	}
	switch o.Target {
	case TargetParley:
	case TargetRabbitMQ:
		if s != Group && s != Direct {
			return fmt.Errorf("scenario %s runs only against parley; %s supports group and direct", s, TargetRabbitMQ)
		}
	case TargetCentrifugo:
		if s != Group && s != Direct && s != BigRoom {
			return fmt.Errorf("scenario %s runs only against parley; %s supports group, direct and bigroom", s, TargetCentrifugo)
		}
		if o.Secret == "" {
			return errors.New("centrifugo needs the HMAC key of its connection tokens (--centrifugo-secret)")
		}
	default:
		return fmt.Errorf("unknown target %q", o.Target)
	}
	if len(o.URLs) == 0 {
		return errors.New("no target URL given")
	}
	for _, u := range o.URLs {
		if err := checkURL(o.Target, u); err != nil {
			return err
		}
	}
	if s == Direct && o.Users%2 != 0 {
		return fmt.Errorf("direct pairs users: --users must be even, not %d", o.Users)
	}
	if s == Seats && o.Seats < 2 {
		return errors.New("seats needs at least 2 seats (the creator holds one)")
	}
	return nil
}

// checkURL accepts an absolute URL with a scheme fitting the target: the
// bench only talks to the hosts it is given.
func checkURL(target, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("target URL %q: %w", raw, err)
	}
	want := []string{"http", "https"}
	if target == TargetRabbitMQ || target == TargetCentrifugo {
		want = []string{"ws", "wss"}
	}
	if (u.Scheme != want[0] && u.Scheme != want[1]) || u.Host == "" {
		return fmt.Errorf("target URL %q: want %s://host:port", raw, want[0])
	}
	return nil
}

// Progress is a snapshot of a running scenario.
type Progress struct {
	// Phase names the step: a set-up step ("setup", "sign-up", "rooms",
	// "join", "seed", "connect"; each has its own, so that no bar goes
	// back), then "measure", "drain" (messaging) or "settle" (connections).
	Phase   string
	Done    int64         // work done in the phase (users set up, operations, deliveries)
	Total   int64         // work the phase expects, 0 when only the time bounds it
	Elapsed time.Duration // time in the phase
	Limit   time.Duration // the phase's time bound, 0 for none
	Errors  int64
	Last    Point // the latest timeline point (measure and drain)
	// Waits counts the set-up requests that waited on the server's
	// per-user limit (429 rate_limited, --rest-send-rate) so far.
	Waits int64
	// DoneUnit says what Done and Total count where the phase label does
	// not: "sent" (messages, in a messaging measurement, whose rate
	// counts deliveries), "requests", "deliveries in" (drain); "" in the
	// set-up, whose label says it.
	DoneUnit string
	// RateUnit says what Last.Rate counts ("deliveries/s", "requests/s");
	// "" before the measurement.
	RateUnit string
	// UpTo marks a Limit that is a most: the phase ends as soon as its
	// work is done (drain, settle).
	UpTo bool
}

// Measuring reports whether the phase is past the set-up: its progress
// has rates and latencies.
func (p Progress) Measuring() bool { return measuring(p.Phase) }

func measuring(phase string) bool { return phase == "measure" || phase == "drain" || phase == "settle" }

// Result is the outcome of a run.
type Result struct {
	Scenario  Scenario  `json:"scenario"`
	Target    string    `json:"target"`
	URLs      []string  `json:"urls"`
	Started   time.Time `json:"started"`
	Machine   Machine   `json:"machine"`
	Shape     Shape     `json:"shape"`
	SetupTime float64   `json:"setup_s"`
	Elapsed   float64   `json:"elapsed_s"` // the measurement, set-up and drain excluded

	// Unit names an operation: request, join, open, delivery, connection.
	Unit       string           `json:"unit"`
	Ops        int64            `json:"ops"`
	Throughput float64          `json:"throughput"` // Ops per second
	Latency    Latency          `json:"latency"`
	Errors     map[string]int64 `json:"errors"` // by kind
	ErrorCount int64            `json:"error_count"`
	ErrorRate  float64          `json:"error_rate"` // errors / (ops + errors)

	Messaging   *MessagingResult   `json:"messaging,omitempty"`
	Seats       *SeatsResult       `json:"seats,omitempty"`
	Connections *ConnectionsResult `json:"connections,omitempty"`
	BigRoom     *BigRoomResult     `json:"bigroom,omitempty"`

	Resources Resources `json:"resources"`

	Timeline  []Point  `json:"timeline"`
	Histogram []Bucket `json:"histogram"`
	Notes     []string `json:"notes,omitempty"`
}

// Shape records the options a run used.
type Shape struct {
	Users           int     `json:"users"`
	Loops           int     `json:"loops"`
	RampUp          float64 `json:"ramp_up_s"`
	Duration        float64 `json:"duration_s"`
	MinInterval     float64 `json:"min_interval_s,omitempty"`
	MaxInterval     float64 `json:"max_interval_s,omitempty"`
	Payload         int     `json:"payload,omitempty"`
	Rooms           int     `json:"rooms,omitempty"`
	HistorySize     int     `json:"history_size,omitempty"`
	PageSize        int     `json:"page_size,omitempty"`
	Seats           int     `json:"seats,omitempty"`
	Conns           int     `json:"connections,omitempty"`
	Senders         int     `json:"senders,omitempty"`
	SessionsPerUser int     `json:"sessions_per_user,omitempty"`
}

// Machine describes where the load generator ran.
type Machine struct {
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	CPUs   int    `json:"cpus"`
	CPU    string `json:"cpu,omitempty"`
	Go     string `json:"go"`
	Memory string `json:"memory,omitempty"`
}

// MessagingResult is what direct and group add: deliveries against what
// the sends should have caused.
type MessagingResult struct {
	Sent       int64    `json:"sent"`       // SEND frames written
	Accepted   int64    `json:"accepted"`   // SENDs answered by a RECEIPT
	Expected   int64    `json:"expected"`   // accepted × subscribers of the room
	Received   int64    `json:"received"`   // MESSAGE frames received
	Lost       int64    `json:"lost"`       // expected − received, when positive
	Duplicates int64    `json:"duplicates"` // a message seen twice (or out of order) by one subscriber
	SendRate   float64  `json:"send_rate"`  // accepted messages per second
	Deliveries float64  `json:"deliveries_per_s"`
	Receipt    Latency  `json:"receipt_latency"`             // SEND → RECEIPT
	Publishes  *float64 `json:"broker_publishes,omitempty"`  // Δ parley_broker_publishes_total (nil: n.a.)
	Messages   *float64 `json:"messages_accepted,omitempty"` // Δ parley_messages_accepted_total (nil: n.a.)
	PerMessage *float64 `json:"publishes_per_message,omitempty"`
	DrainTime  float64  `json:"drain_s"`

	// Room events (group with --events, --typing, --read-after-send).
	EventDeliveries int64   `json:"event_deliveries,omitempty"` // event MESSAGE frames received
	EventRate       float64 `json:"event_deliveries_per_s,omitempty"`
	TypingSent      int64   `json:"typing_sent,omitempty"`
	ReadPuts        int64   `json:"read_puts,omitempty"` // PUT read answered 204
}

// SeatsResult is what seats adds.
type SeatsResult struct {
	Rooms       int   `json:"rooms"`        // one per loop
	Capacity    int   `json:"capacity"`     // per room, the creator's seat included
	Joined      int64 `json:"joined"`       // 201 answers
	Full        int64 `json:"full"`         // 409 room_full answers
	MemberCount int64 `json:"member_count"` // sum over rooms, as the server reports after the run
	Oversold    int64 `json:"oversold"`     // members beyond capacity; must be 0
}

// ConnectionsResult is what connections adds.
type ConnectionsResult struct {
	Opened       int64   `json:"opened"`
	RSSBefore    float64 `json:"rss_before_bytes"`
	RSSAfter     float64 `json:"rss_after_bytes"`
	BytesPerConn float64 `json:"rss_per_connection_bytes"`
	HeapBefore   float64 `json:"heap_before_bytes,omitempty"`
	HeapAfter    float64 `json:"heap_after_bytes,omitempty"`
	HeapPerConn  float64 `json:"heap_per_connection_bytes,omitempty"`
	Goroutines   float64 `json:"goroutines_after,omitempty"`
}

// Run runs scenario s with opts against the URLs in opts and returns its
// result. Errors of individual operations are counted in the result; Run
// fails only when the set-up fails or the options are invalid.
func Run(ctx context.Context, s Scenario, opts Options) (*Result, error) {
	o := opts.withDefaults(s)
	if err := o.validate(s); err != nil {
		return nil, err
	}
	r := newRun(s, o)
	var err error
	switch s {
	case RoomList:
		err = r.roomList(ctx)
	case History:
		err = r.history(ctx)
	case Seats:
		err = r.seats(ctx)
	case Open:
		err = r.open(ctx)
	case Direct:
		err = r.direct(ctx)
	case Group:
		err = r.group(ctx)
	case Connections:
		err = r.connections(ctx)
	case BigRoom:
		err = r.bigRoom(ctx)
	case Search:
		err = r.search(ctx)
	}
	// Stop the ticker first, so that no timeline point follows the
	// measurement.
	r.close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	return r.result(), nil
}

func machine() Machine {
	return Machine{
		OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		CPU: cpuModel(), Go: runtime.Version(), Memory: memTotal(),
	}
}

func shapeOf(o Options) Shape {
	return Shape{
		Users: o.Users, Loops: o.Loops, RampUp: o.RampUp.Seconds(), Duration: o.Duration.Seconds(),
		MinInterval: o.MinInterval.Seconds(), MaxInterval: o.MaxInterval.Seconds(),
		Payload: o.Payload, Rooms: o.Rooms, HistorySize: o.HistorySize, PageSize: o.PageSize,
		Seats: o.Seats, Conns: o.Conns,
	}
}

func trimTrailingSlash(u string) string { return strings.TrimRight(u, "/") }
