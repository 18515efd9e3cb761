package loadgen

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The process metrics the connections scenario reads.
const (
	metricRSS        = "process_resident_memory_bytes"
	metricHeap       = "go_memstats_heap_inuse_bytes"
	metricGoroutines = "go_goroutines"
)

// connections opens Conns idle STOMP connections spread over Users users,
// each subscribed to its user queue and to a room of all users, holds them
// for Duration and reports how much the servers' resident memory grew per
// connection. Latency is connect + CONNECTED + subscribed.
func (r *run) connections(ctx context.Context) error {
	accs, rooms, err := r.setupRooms(ctx, r.o.Users, 1, settlePage)
	if err != nil {
		return err
	}
	topic := "/topic/rooms." + rooms[0].ID
	r.setPhaseUnits("settle", 0, settleLimit, phaseUnits{upTo: true})
	before, err := r.settle(ctx, accs, rooms[0].ID)
	if err != nil {
		return err
	}

	conns := make([]*stompConn, r.o.Conns)
	var opened atomic.Int64
	r.res.Unit = "connection"
	start := r.startMeasure(int64(r.o.Conns))
	deadline := start.Add(r.o.Duration)
	parallel(ctx, r.o.Conns, r.o.SetupConcurrency*4, func(ctx context.Context, i int) error {
		if !time.Now().Before(deadline) {
			return nil
		}
		t0 := time.Now()
		c, err := r.openIdle(ctx, accs[i%len(accs)], topic)
		r.done.Add(1)
		if err != nil {
			r.rec.Error(i, connectKind(err))
			return nil
		}
		r.rec.Record(i, time.Since(t0))
		conns[i] = c
		opened.Add(1)
		return nil
	})
	openTime := time.Since(start)

	var closing atomic.Bool
	wg := r.keepReading(conns, &closing)
	after, err := r.settle(ctx, accs, rooms[0].ID)
	sleepUntil(ctx, deadline, deadline.Add(time.Nanosecond))
	r.stopMeasure(start)
	r.res.Elapsed = openTime.Seconds()

	closing.Store(true)
	for _, c := range conns {
		if c != nil {
			c.nc.Close()
		}
	}
	wg.Wait()
	if err != nil {
		return err
	}
	r.connectionsResult(opened.Load(), before, after)
	return nil
}

// openIdle dials a's node as a, subscribes to a's user queue and to topic,
// and closes the connection again when a step fails.
func (r *run) openIdle(ctx context.Context, a account, topic string) (*stompConn, error) {
	url := wsURLOf(a.node.base)
	c, err := dialSTOMP(ctx, url, connectParams{host: hostOf(url), passcode: a.Token, bearer: a.Token}, r.o.Timeout, idleBuffer)
	if err == nil {
		if err = c.subscribe("0", "/user/queue/messages", r.o.Timeout); err == nil {
			err = c.subscribe("1", topic, r.o.Timeout)
		}
		if err != nil {
			c.nc.Close()
		}
	}
	return c, err
}

// keepReading reads every open connection of conns in a goroutine of its
// own, so that pings are answered and a server's close is seen while the
// connections are held; a read error counts as a lost connection unless
// closing is set. The returned group is done when every reader has ended.
func (r *run) keepReading(conns []*stompConn, closing *atomic.Bool) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if err := c.readFrame(); err != nil {
					if !closing.Load() {
						r.rec.Error(i, "connection lost: "+errKind(err))
					}
					return
				}
			}
		}()
	}
	return &wg
}

// connectionsResult sets the run's result from the opened count and the
// servers' metrics before and after the connections were opened.
func (r *run) connectionsResult(opened int64, before, after map[string]float64) {
	res := &ConnectionsResult{
		Opened:     opened,
		RSSBefore:  before[metricRSS],
		RSSAfter:   after[metricRSS],
		HeapBefore: before[metricHeap],
		HeapAfter:  after[metricHeap],
		Goroutines: after[metricGoroutines],
	}
	if _, ok := after[metricRSS]; !ok {
		r.res.Notes = append(r.res.Notes, "no "+metricRSS+" in /metrics: RSS per connection n.a.")
	} else if res.Opened > 0 {
		res.BytesPerConn = (res.RSSAfter - res.RSSBefore) / float64(res.Opened)
		res.HeapPerConn = (res.HeapAfter - res.HeapBefore) / float64(res.Opened)
		if res.BytesPerConn < res.HeapPerConn/2 {
			r.res.Notes = append(r.res.Notes, "RSS grew less than the heap: the connections reused memory the set-up had freed; open more connections for a steadier figure")
		}
	}
	r.res.Connections = res
	r.res.Ops = res.Opened
}

// Settling: the memory of a Go server is read after its garbage collector
// has run twice (so that the set-up's garbage, such as password hashing
// buffers, is gone) and its RSS has stopped moving (the scavenger has
// returned what it will), or after settleLimit.
const (
	settleLimit = 30 * time.Second
	settlePage  = 50 // messages in the room whose history makes the garbage
	metricGCs   = "go_gc_duration_seconds_count"
)

// settle makes the servers allocate (history requests) until each has
// collected garbage twice, waits for their RSS to be steady and returns
// their metrics summed.
func (r *run) settle(ctx context.Context, accs []account, roomID string) (map[string]float64, error) {
	deadline := time.Now().Add(settleLimit)
	m, err := r.sumMetrics(ctx)
	if err != nil {
		return nil, err
	}
	gc0, path := m[metricGCs], "/api/rooms/"+url.PathEscape(roomID)+"/messages?limit="+strconv.Itoa(settlePage)
	for m[metricGCs] < gc0+2*float64(len(r.nodes)) && time.Now().Before(deadline) && ctx.Err() == nil {
		parallel(ctx, 200, 8, func(ctx context.Context, i int) error {
			a := accs[i%len(accs)]
			a.node.hit(ctx, "GET", path, a.Token)
			return nil
		})
		if m, err = r.sumMetrics(ctx); err != nil {
			return nil, err
		}
	}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Second)
		next, err := r.sumMetrics(ctx)
		if err != nil {
			return nil, err
		}
		steady := math.Abs(next[metricRSS]-m[metricRSS]) < 512<<10
		m = next
		if steady {
			break
		}
	}
	return m, nil
}

// sumMetrics scrapes every node and sums the values by name.
func (r *run) sumMetrics(ctx context.Context) (map[string]float64, error) {
	sum := map[string]float64{}
	for _, n := range r.nodes {
		vals, err := n.metrics(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.base, err)
		}
		for k, v := range vals {
			sum[k] += v
		}
	}
	return sum, nil
}

// connectKind classifies a failure to open a connection.
func connectKind(err error) string {
	s := err.Error()
	if len(s) > 80 {
		s = s[:80]
	}
	return "connect: " + s
}
