package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"parley/loadgen"
	"parley/loadgen/report"
)

const benchUsage = `usage: parley bench <scenario> [flags]

scenarios (docs/load-tests.md):
  direct        seed 000: users in 1:1 rooms, send → peer receives
  roomlist      seed 001: room list in a loop
  history       seed 001: paging older messages
  group         seed 002: one room, every member sends every 1–3 s
  seats         seed 003: concurrent joins of a room with fewer seats
  open          seed 004: room info + last message ("open a chat")
  connections   idle subscribed connections, server RSS per connection
  bigroom       one room of 10,000 members, 20 of them sending every second
  search        users searching their rooms over a large history

Set-up (users, rooms, seeded history) goes through the REST API: start the
server under test with --signup-rate 0, and with --rest-send-rate 0 for a
fast set-up (its per-user send limit slows the seeding; the bench waits it
out and says so). Nothing of the set-up is measured.

Run 'parley bench <scenario> -h' for the flags of a scenario and their defaults.
`

// runBench is the bench command: it parses flags, runs a loadgen scenario
// and prints its result.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	scn, err := benchScenario(args, stderr)
	if err != nil {
		return err
	}

	o := loadgen.Defaults(scn)
	o.Seats = 0 // half the users unless given
	var (
		urlFlag, nodes, interval, jsonPath, htmlPath, progress string
		rate                                                   float64
	)
	fs := flag.NewFlagSet("parley bench "+string(scn), flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Target, "target", o.Target, "server under test: parley, rabbitmq-web-stomp (group, direct) or centrifugo (group, direct, bigroom)")
	fs.StringVar(&urlFlag, "url", "", "the server to drive (default http://127.0.0.1:8080, ws://127.0.0.1:15674/ws for rabbitmq-web-stomp, ws://127.0.0.1:8000/connection/websocket for centrifugo)")
	fs.StringVar(&nodes, "nodes", "", "comma-separated URLs of a cluster's nodes; users are spread over them (instead of --url)")
	fs.IntVar(&o.Users, "users", o.Users, "concurrent virtual users (JMeter threads)")
	fs.IntVar(&o.Loops, "loops", o.Loops, "operations per user: requests, messages, or rooms to join (seats)")
	fs.DurationVar(&o.RampUp, "ramp-up", o.RampUp, "start the users evenly over this time")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "stop measuring after this time, loops done or not")
	fs.StringVar(&interval, "interval", intervalText(o.MinInterval, o.MaxInterval), "messaging: each user sends every MIN-MAX, uniform (1s-3s, 250ms); 0: the next message when the last is receipted")
	fs.Float64Var(&rate, "rate", 0, "messaging: messages per second per user, a fixed interval of 1/rate (overrides --interval)")
	fs.IntVar(&o.Payload, "payload", o.Payload, "message body size in bytes")
	fs.IntVar(&o.Rooms, "rooms", o.Rooms, "roomlist, open: rooms every user is a member of; search: rooms in all")
	fs.IntVar(&o.HistorySize, "history", o.HistorySize, "messages seeded into each room")
	fs.IntVar(&o.PageSize, "page", o.PageSize, "page size of room list and history requests (at most 100)")
	fs.IntVar(&o.Seats, "seats", o.Seats, "seats: capacity of each room, its creator's seat included (default: half the users)")
	fs.IntVar(&o.Conns, "connections", o.Conns, "connections: connections to open, spread over the users")
	fs.BoolVar(&o.Events, "events", false, "group: every member also subscribes to /topic/rooms.{id}.events (room events)")
	fs.DurationVar(&o.Typing, "typing", 0, "group: every member sends a typing signal this often (0: never)")
	fs.BoolVar(&o.ReadAfterSend, "read-after-send", false, "group: every member PUTs its read position after each of its messages is receipted (a PUT its own message already moved writes nothing and counts against the server's --rest-read-rate: past 20 a second per member, start it with --rest-read-rate 0)")
	fs.IntVar(&o.SetupConcurrency, "setup-concurrency", o.SetupConcurrency, "sign-ups in flight during set-up (each costs the server two password hashes)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "timeout of one request, connection or receipt")
	fs.DurationVar(&o.Drain, "drain", o.Drain, "messaging: wait this long at most for deliveries after the last send")
	fs.StringVar(&o.Login, "login", o.Login, "rabbitmq-web-stomp: STOMP login")
	fs.StringVar(&o.Passcode, "passcode", o.Passcode, "rabbitmq-web-stomp: STOMP passcode")
	fs.StringVar(&o.Secret, "centrifugo-secret", "", "centrifugo: HMAC key of its connection tokens (client.token.hmac_secret_key)")
	fs.IntVar(&o.Senders, "senders", o.Senders, "bigroom: members that send (the first ones)")
	fs.DurationVar(&o.Late, "late", o.Late, "bigroom: a delivery later than this counts as late")
	fs.IntVar(&o.SessionsPerUser, "sessions-per-user", o.SessionsPerUser, "bigroom: members' sessions each signed-up user opens (parley; fewer sign-ups; at most the server's --stomp-max-conns-per-user)")
	fs.IntVar(&o.ServerPID, "server-pid", 0, "a local server process whose CPU use to report (Linux; for rabbitmq-web-stomp: the beam.smp pid)")
	fs.StringVar(&jsonPath, "json", "", "write the result as JSON to this file (- for standard output)")
	fs.StringVar(&htmlPath, "html", "", "write a self-contained HTML report with charts to this file")
	fs.StringVar(&progress, "progress", "auto", "progress bar on standard error: auto (when it is a terminal), on, off")
	applies := func(name string) bool { return benchFlagApplies(name, scn) }
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: parley bench %s [flags]\n\nThe flags of %s (every flag can also be set by the environment variable named beside it):\n\n", scn, scn)
		printFlags(stderr, fs, applies)
	}
	if err := refuseOtherFlags(args[1:], scn); err != nil {
		return err
	}
	if err := parseFlags(fs, args[1:], os.Getenv); err != nil {
		return err
	}
	if err := applyBenchFlags(&o, benchArgs{urlFlag, nodes, interval, progress, rate}, stderr); err != nil {
		return err
	}

	res, err := loadgen.Run(ctx, scn, o)
	if o.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	return writeBenchResult(res, stdout, jsonPath, htmlPath)
}

// benchScenario returns the scenario args names first, or prints the usage
// and fails when args names none or an unknown one.
func benchScenario(args []string, stderr io.Writer) (loadgen.Scenario, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, benchUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			return "", flag.ErrHelp
		}
		return "", errors.New("bench: no scenario")
	}
	scn := loadgen.Scenario(args[0])
	known := false
	for _, s := range loadgen.Scenarios {
		known = known || s == scn
	}
	if !known {
		fmt.Fprint(stderr, benchUsage)
		return "", fmt.Errorf("bench: unknown scenario %q", args[0])
	}
	return scn, nil
}

// benchArgs holds the bench flags that do not go straight into
// loadgen.Options; applyBenchFlags turns them into options.
type benchArgs struct {
	url, nodes, interval, progress string
	rate                           float64
}

// applyBenchFlags sets o's URLs, send interval and progress bar from b
// and checks that every loop is bounded.
func applyBenchFlags(o *loadgen.Options, b benchArgs, stderr io.Writer) error {
	urlFlag, nodes, interval, progress, rate := b.url, b.nodes, b.interval, b.progress, b.rate
	switch {
	case nodes != "":
		for _, u := range strings.Split(nodes, ",") {
			if u = strings.TrimSpace(u); u != "" {
				o.URLs = append(o.URLs, u)
			}
		}
	case urlFlag != "":
		o.URLs = []string{urlFlag}
	case o.Target == loadgen.TargetRabbitMQ:
		o.URLs = []string{"ws://127.0.0.1:15674/ws"}
	case o.Target == loadgen.TargetCentrifugo:
		o.URLs = []string{"ws://127.0.0.1:8000/connection/websocket"}
	default:
		o.URLs = []string{"http://127.0.0.1:8080"}
	}
	var err error
	if o.MinInterval, o.MaxInterval, err = parseInterval(interval); err != nil {
		return err
	}
	if rate > 0 {
		d := time.Duration(float64(time.Second) / rate)
		o.MinInterval, o.MaxInterval = d, d
	}
	if o.Users < 1 || o.Loops < 1 || o.Duration <= 0 {
		return errors.New("bench: --users, --loops and --duration must be positive: every loop is bounded in count and time")
	}
	switch progress {
	case "on":
		o.Progress = progressBar(stderr)
	case "auto":
		if isTerminal(stderr) {
			o.Progress = progressBar(stderr)
		}
	case "off":
	default:
		return fmt.Errorf("bench: --progress must be auto, on or off, not %q", progress)
	}
	return nil
}

// writeBenchResult prints res as text to stdout, writes the JSON and HTML
// reports asked for, and fails when seats were oversold.
func writeBenchResult(res *loadgen.Result, stdout io.Writer, jsonPath, htmlPath string) error {
	if err := report.WriteText(stdout, res); err != nil {
		return err
	}
	if jsonPath != "" {
		if err := writeTo(jsonPath, stdout, func(w io.Writer) error { return report.WriteJSON(w, res) }); err != nil {
			return err
		}
	}
	if htmlPath != "" {
		if err := writeTo(htmlPath, stdout, func(w io.Writer) error { return report.WriteHTML(w, res) }); err != nil {
			return err
		}
	}
	if res.Seats != nil && res.Seats.Oversold > 0 {
		return fmt.Errorf("bench: %d seats oversold", res.Seats.Oversold)
	}
	return nil
}

// benchFlagScenarios names the scenarios of each flag that only some
// take; every other flag applies to every scenario.
var benchFlagScenarios = map[string][]loadgen.Scenario{
	"target":            {loadgen.Direct, loadgen.Group, loadgen.BigRoom},
	"login":             {loadgen.Direct, loadgen.Group},
	"passcode":          {loadgen.Direct, loadgen.Group},
	"centrifugo-secret": {loadgen.Direct, loadgen.Group, loadgen.BigRoom},
	"senders":           {loadgen.BigRoom},
	"late":              {loadgen.BigRoom},
	"sessions-per-user": {loadgen.BigRoom},
	"interval":          {loadgen.Direct, loadgen.Group, loadgen.BigRoom},
	"rate":              {loadgen.Direct, loadgen.Group, loadgen.BigRoom},
	"drain":             {loadgen.Direct, loadgen.Group, loadgen.BigRoom},
	"payload":           {loadgen.Direct, loadgen.Group, loadgen.BigRoom, loadgen.RoomList, loadgen.History, loadgen.Open, loadgen.Search},
	"history":           {loadgen.RoomList, loadgen.History, loadgen.Open, loadgen.Search},
	"rooms":             {loadgen.RoomList, loadgen.Open, loadgen.Search},
	"page":              {loadgen.RoomList, loadgen.History, loadgen.Search},
	"seats":             {loadgen.Seats},
	"connections":       {loadgen.Connections},
	"loops":             {loadgen.Direct, loadgen.Group, loadgen.BigRoom, loadgen.RoomList, loadgen.History, loadgen.Open, loadgen.Seats, loadgen.Search},
	"ramp-up":           {loadgen.Direct, loadgen.Group, loadgen.BigRoom, loadgen.RoomList, loadgen.History, loadgen.Open, loadgen.Seats, loadgen.Search},
	"events":            {loadgen.Group},
	"typing":            {loadgen.Group},
	"read-after-send":   {loadgen.Group},
}

// benchFlagApplies reports whether a flag changes scenario scn.
func benchFlagApplies(name string, scn loadgen.Scenario) bool {
	scns, some := benchFlagScenarios[name]
	return !some || slices.Contains(scns, scn)
}

// refuseOtherFlags refuses a flag on the command line that scn does not
// take (its variable in the environment is ignored: one environment may
// serve several scenarios).
func refuseOtherFlags(args []string, scn loadgen.Scenario) error {
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if benchFlagApplies(name, scn) {
			continue
		}
		var of []string
		for _, s := range benchFlagScenarios[name] {
			of = append(of, string(s))
		}
		msg := fmt.Sprintf("bench: --%s does not apply to %s (it is a flag of %s)", name, scn, strings.Join(of, ", "))
		if name == "target" {
			msg += "; " + string(scn) + " runs only against parley"
		}
		return errors.New(msg)
	}
	return nil
}

// parseInterval reads "1s-3s", "250ms" or "0".
func parseInterval(s string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	if lo, err = time.ParseDuration(a); err != nil {
		return 0, 0, fmt.Errorf("bench: --interval %q: %w", s, err)
	}
	hi = lo
	if isRange {
		if hi, err = time.ParseDuration(b); err != nil {
			return 0, 0, fmt.Errorf("bench: --interval %q: %w", s, err)
		}
	}
	if lo < 0 || hi < lo {
		return 0, 0, fmt.Errorf("bench: --interval %q: want MIN-MAX with 0 <= MIN <= MAX", s)
	}
	return lo, hi, nil
}

func intervalText(lo, hi time.Duration) string {
	if lo == hi {
		return lo.String()
	}
	return lo.String() + "-" + hi.String()
}

// writeTo writes with f to the file at path, or to stdout for "-".
func writeTo(path string, stdout io.Writer, f func(io.Writer) error) error {
	if path == "-" {
		return f(stdout)
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar returns a Progress callback that redraws one line on w.
func progressBar(w io.Writer) func(loadgen.Progress) {
	const width = 30
	return func(p loadgen.Progress) {
		frac, byTime := progressFraction(p)
		n := int(frac * width)
		bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
		line := fmt.Sprintf("%-7s [%s] %3.0f%%  %s", p.Phase, bar, 100*frac, p.Elapsed.Truncate(100*time.Millisecond))
		var parts []string // each number with what it counts
		// A bound that is a most is worth knowing even when the count leads.
		if p.Limit > 0 && (byTime || p.UpTo) {
			bound := "of "
			if p.UpTo {
				bound = "of at most "
			}
			parts = append(parts, bound+p.Limit.String())
		}
		done, total := strconv.FormatInt(p.Done, 10), strconv.FormatInt(p.Total, 10)
		switch {
		case p.Total > 0 && (!byTime || p.UpTo) && p.DoneUnit != "":
			parts = append(parts, done+" of "+total+" "+p.DoneUnit)
		case p.Total > 0 && (!byTime || p.UpTo):
			parts = append(parts, done+"/"+total) // the set-up step's label says what
		case p.DoneUnit != "":
			parts = append(parts, done+" "+p.DoneUnit)
		}
		if p.RateUnit != "" {
			parts = append(parts, fmt.Sprintf("%.0f %s", p.Last.Rate, p.RateUnit))
		}
		if len(parts) > 0 {
			line += "  " + strings.Join(parts, ", ")
		}
		if p.RateUnit != "" {
			line += fmt.Sprintf("  p99 %.2f ms", p.Last.P99)
		} else if p.Waits > 0 {
			line += "  (slowed by the server's --rest-send-rate: 429 ×" + strconv.FormatInt(p.Waits, 10) + ")"
		}
		line += "  errors " + strconv.FormatInt(p.Errors, 10)
		fmt.Fprint(w, "\r\033[K"+line)
	}
}

// progressFraction is how far a phase is, 0 to 1, and whether time, not
// the count of work, bounds it: a run that --duration ends before its
// users × loops are done is shown against its time, not against a count
// it will never reach.
func progressFraction(p loadgen.Progress) (frac float64, byTime bool) {
	var byCount, timeFrac float64
	if p.Total > 0 {
		byCount = float64(p.Done) / float64(p.Total)
	}
	if p.Limit > 0 {
		timeFrac = float64(p.Elapsed) / float64(p.Limit)
	}
	switch {
	case p.Limit <= 0:
		frac = byCount
	case p.Total <= 0:
		frac, byTime = timeFrac, true
	default:
		// Time bounds the phase when, at the pace so far, the count would
		// end after the time does.
		byTime = timeFrac >= byCount
		frac = max(byCount, timeFrac)
	}
	return min(max(frac, 0), 1), byTime
}
