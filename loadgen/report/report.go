package report

import (
	"encoding/json"
	"fmt"
	"io"
	"parley/loadgen"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes res as indented JSON.
func WriteJSON(w io.Writer, res *loadgen.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// WriteText writes the summary table of res.
func WriteText(w io.Writer, res *loadgen.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, args...)...)
	}
	fmt.Fprintf(tw, "%s against %s (%s)\n", res.Scenario, res.Target, strings.Join(res.URLs, ", "))
	row("shape", "%s", shapeText(res))
	row("set-up", "%.1f s (not measured)", res.SetupTime)
	row("measured", "%.2f s", res.Elapsed)
	// The messaging and seats rows below say the count, with its check.
	if res.Messaging == nil && res.Seats == nil {
		row(plural(res.Unit), "%d", res.Ops)
	}
	row("throughput", "%s %s/s", num(res.Throughput), plural(res.Unit))
	l := res.Latency
	row("latency (ms)", "p50 %s  p90 %s  p95 %s  p99 %s  p99.9 %s  max %s  (%s)",
		ms(l.P50), ms(l.P90), ms(l.P95), ms(l.P99), ms(l.P999), ms(l.Max), samplesText(res))
	row("errors", "%d (%.3f%%)", res.ErrorCount, 100*res.ErrorRate)
	for _, k := range sortedKeys(res.Errors) {
		row("", "%6d  %s", res.Errors[k], k)
	}
	if m := res.Messaging; m != nil {
		row("messages", "sent %d, receipted %d (%s/s)", m.Sent, m.Accepted, num(m.SendRate))
		row("deliveries", "received %d of %d expected, lost %d, duplicate %d", m.Received, m.Expected, m.Lost, m.Duplicates)
		r := m.Receipt
		row("receipt (ms)", "p50 %s  p99 %s  max %s", ms(r.P50), ms(r.P99), ms(r.Max))
		if res.Scenario == loadgen.Group && res.Target == loadgen.TargetParley {
			row("publishes/msg", "%s (broker publishes %s, messages accepted %s)",
				optNum(m.PerMessage), optNum(m.Publishes), optNum(m.Messages))
		}
		if m.EventDeliveries > 0 || m.TypingSent > 0 || m.ReadPuts > 0 {
			row("room events", "received %d (%s/s), typing sent %d, read PUTs %d", m.EventDeliveries, num(m.EventRate), m.TypingSent, m.ReadPuts)
		}
		row("drain", "%.2f s", m.DrainTime)
	}
	if b := res.BigRoom; b != nil {
		row("members", "%d sessions subscribed, %d sending", b.Members, b.Senders)
		row("late", "%d deliveries over %s ms (%.3f%%)", b.Late, num(b.LateMs), 100*b.LateRate)
		if b.RSSPeak > 0 {
			row("server RSS", "%s connected, %s peak, %s at the end", mib(b.RSSConnected), mib(b.RSSPeak), mib(b.RSSEnd))
		} else {
			row("server RSS", "n.a. (give --server-pid for a server without Parley's /metrics)")
		}
	}
	if s := res.Seats; s != nil {
		row("rooms", "%s × %s", count(s.Rooms, "room"), count(s.Capacity, "seat"))
		row("joins", "%d joined (201), %d refused room_full (409)", s.Joined, s.Full)
		row("members", "%d in total, server's count", s.MemberCount)
		row("oversold", "%d", s.Oversold)
	}
	if c := res.Connections; c != nil {
		row("opened", "%d", c.Opened)
		row("server RSS", "%s → %s", mib(c.RSSBefore), mib(c.RSSAfter))
		row("RSS/connection", "%s KiB", num(c.BytesPerConn/1024))
		if c.HeapAfter > 0 {
			row("heap in use", "%s → %s, %s KiB/connection, %.0f goroutines", mib(c.HeapBefore), mib(c.HeapAfter), num(c.HeapPerConn/1024), c.Goroutines)
		}
	}
	for _, n := range res.Notes {
		row("note", "%s", n)
	}
	u := res.Resources
	server := "n.a."
	if res.Target == loadgen.TargetParley || u.ServerCPU > 0 {
		server = fmt.Sprintf("%.2f", u.ServerCPU)
	}
	row("CPU (cores)", "server %s, load generator %.2f; load average %.1f → %.1f",
		server, u.ClientCPU, u.Load1Start, u.Load1End)
	row("machine", "%s", machineText(res.Machine))
	return tw.Flush()
}

func shapeText(res *loadgen.Result) string {
	s := res.Shape
	parts := []string{count(s.Users, "user")}
	switch res.Scenario {
	case loadgen.Connections:
		parts = append(parts, fmt.Sprintf("%s, held %gs", count(s.Conns, "connection"), s.Duration))
		return strings.Join(parts, ", ")
	case loadgen.Group, loadgen.Direct, loadgen.BigRoom:
		if s.Senders > 0 {
			parts = append(parts, count(s.Senders, "sender"))
		}
		if s.SessionsPerUser > 1 {
			parts = append(parts, fmt.Sprintf("%d sessions per user", s.SessionsPerUser))
		}
		if s.MaxInterval > 0 {
			parts = append(parts, fmt.Sprintf("one message every %g–%gs each", s.MinInterval, s.MaxInterval))
		} else {
			parts = append(parts, "next message on receipt")
		}
		parts = append(parts, fmt.Sprintf("%d B bodies", s.Payload))
	case loadgen.Seats:
		parts = append(parts, count(s.Seats, "seat")+" per room")
	case loadgen.History:
		parts = append(parts, fmt.Sprintf("%s, pages of %d", count(s.HistorySize, "message"), s.PageSize))
	case loadgen.RoomList, loadgen.Open:
		parts = append(parts, count(s.Rooms, "room"))
	}
	parts = append(parts, "≤ "+count(s.Loops, "loop"), fmt.Sprintf("≤ %gs", s.Duration))
	if s.RampUp > 0 {
		parts = append(parts, fmt.Sprintf("ramp-up %gs", s.RampUp))
	}
	return strings.Join(parts, ", ")
}

// count says n of a noun: 1 user, 2 users.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, plural(noun))
}

// memoryText turns /proc/meminfo's "16318436 kB" into "15.6 GiB".
func memoryText(s string) string {
	v, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
	kb, err := strconv.ParseFloat(v, 64)
	if err != nil || unit != "kB" {
		return s
	}
	return fmt.Sprintf("%.1f GiB", kb/(1<<20))
}

// plural names several units: request → requests, delivery → deliveries,
// search → searches.
func plural(unit string) string {
	if strings.HasSuffix(unit, "ch") {
		return unit + "es"
	}
	if strings.HasSuffix(unit, "y") {
		return strings.TrimSuffix(unit, "y") + "ies"
	}
	return unit + "s"
}

func machineText(m loadgen.Machine) string {
	s := fmt.Sprintf("%s/%s, %d CPUs", m.OS, m.Arch, m.CPUs)
	if m.CPU != "" {
		s += " (" + m.CPU + ")"
	}
	if m.Memory != "" {
		s += ", " + memoryText(m.Memory)
	}
	return s + ", " + m.Go
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	return keys
}

// ms formats milliseconds with three significant digits.
func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 100:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// num formats a rate with thousands separators.
func num(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func optNum(v *float64) string {
	if v == nil {
		return "n.a."
	}
	if *v < 10 {
		return fmt.Sprintf("%.2f", *v)
	}
	return num(*v)
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// samplesText says what the latency percentiles are of. A messaging run
// delivers each message to its sender too (it is a member of the room),
// and that copy is counted as a delivery but not timed: the latency is
// of the deliveries to the others.
func samplesText(res *loadgen.Result) string {
	n := res.Latency.Count
	if res.Messaging != nil && res.Ops > n {
		return fmt.Sprintf("%d latency samples of %d %s (a sender's copy of its own message is not timed)", n, res.Ops, plural(res.Unit))
	}
	return fmt.Sprintf("%d latency samples", n)
}
