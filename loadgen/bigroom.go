package loadgen

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// BigRoomResult is what bigroom adds to the messaging figures: how many
// deliveries came late, and the servers' memory.
type BigRoomResult struct {
	Members  int     `json:"members"`   // subscribed sessions
	Accounts int     `json:"accounts"`  // users behind them (Parley)
	Senders  int     `json:"senders"`   // members that send
	LateMs   float64 `json:"late_ms"`   // the bound past which a delivery is late
	Late     int64   `json:"late"`      // deliveries received later than LateMs
	LateRate float64 `json:"late_rate"` // Late / deliveries received
	// RSS of the servers (summed over the nodes), when known: once every
	// member is connected, the highest seen while measuring and draining,
	// and at the end.
	RSSConnected float64 `json:"rss_connected_bytes,omitempty"`
	RSSPeak      float64 `json:"rss_peak_bytes,omitempty"`
	RSSEnd       float64 `json:"rss_end_bytes,omitempty"`
}

// bigRoomBuffer is the read buffer of a member's connection: 10,000 of
// them share the load generator's memory.
const bigRoomBuffer = 16 << 10

// bigRoom is one room of Users members (10,000 by default, spread over the
// nodes given), of which the first Senders send every MinInterval..
// MaxInterval (every second by default: 200,000 deliveries/s). Latency is
// send → a member receives; a delivery later than Late is counted late.
// Against Parley each account opens SessionsPerUser of the sessions, so
// that the set-up signs up fewer users (two password hashes each).
func (r *run) bigRoom(ctx context.Context) error {
	m := &msgRun{r: r, base: time.Now(), ack: NewRecorder(), senders: r.o.Senders, readBuf: bigRoomBuffer}
	m.subs = make([]int64, 1)
	m.cls = make([]*msgClient, r.o.Users)
	for i := range m.cls {
		m.cls[i] = &msgClient{idx: i}
	}
	m.accounts = (r.o.Users + r.o.SessionsPerUser - 1) / r.o.SessionsPerUser
	if err := m.setup(ctx, func(ctx context.Context, accs []account) ([]string, error) {
		rm, err := accs[0].createGroup(ctx, "bench bigroom", 0)
		if err != nil {
			return nil, err
		}
		return []string{rm.ID}, r.joinAll(ctx, accs[1:], []roomInfo{rm})
	}); err != nil {
		return err
	}
	res := &BigRoomResult{
		Members: int(m.subs[0]), Senders: m.senderCount(), LateMs: float64(r.o.Late) / float64(time.Millisecond),
	}
	if r.o.Target == TargetParley {
		res.Accounts = m.accounts
	}
	r.res.Shape.Senders, r.res.Shape.SessionsPerUser = res.Senders, r.o.SessionsPerUser
	res.RSSConnected, _ = r.serverRSS(ctx)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if v, ok := r.serverRSS(ctx); ok {
					res.RSSPeak = max(res.RSSPeak, v)
				}
			}
		}
	})
	err := m.measure(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	if v, ok := r.serverRSS(ctx); ok {
		res.RSSEnd = v
		res.RSSPeak = max(res.RSSPeak, v)
	}
	res.Late = countAbove(m.r.rec.Total(), r.o.Late)
	if n := r.res.Messaging.Received; n > 0 {
		res.LateRate = float64(res.Late) / float64(n)
	}
	r.res.BigRoom = res
	return nil
}

// countAbove counts the values of h above d.
func countAbove(h *hdrhistogram.Histogram, d time.Duration) int64 {
	bound := d.Microseconds()
	var n int64
	for _, b := range h.Distribution() {
		if b.From > bound {
			n += b.Count
		}
	}
	return n
}

// serverRSS reads the resident memory of the servers under test: the
// process Options.ServerPID from /proc, else the sum of the Parley nodes'
// process_resident_memory_bytes.
func (r *run) serverRSS(ctx context.Context) (float64, bool) {
	if r.o.ServerPID > 0 {
		v := procRSS(r.o.ServerPID)
		return v, v > 0
	}
	if r.o.Target != TargetParley {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	vals, err := r.sumMetrics(ctx)
	if err != nil {
		return 0, false
	}
	v, ok := vals[metricRSS]
	return v, ok
}

// procRSS reads the resident set of a local process from
// /proc/PID/status (Linux); 0 when it cannot.
func procRSS(pid int) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) == 0 {
				return 0
			}
			kb, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
