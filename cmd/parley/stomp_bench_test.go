package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/stomp"
)

// BenchmarkGroupRoom is seed 002's load end to end: a room of 250 members
// (PARLEY_BENCH_MEMBERS), each on its own WebSocket STOMP session and
// sending a message every 1 to 3 s, for PARLEY_BENCH_DURATION (default
// 20 s), through a real node with the SQLite store (--sync full). It
// reports the send → delivery latency over every delivery and fails on any
// lost, duplicated or reordered message. It runs once whatever b.N is.
//
//	go test -run '^$' -bench GroupRoom -benchtime 1x ./cmd/parley/
func BenchmarkGroupRoom(b *testing.B) {
	members, duration := 250, 20*time.Second
	if s := os.Getenv("PARLEY_BENCH_MEMBERS"); s != "" {
		members, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("PARLEY_BENCH_DURATION"); s != "" {
		duration, _ = time.ParseDuration(s)
	}
	m := MustOpenMain(b, func(c *Config) { c.Sync = benchSync() })

	clients := make([]*client, members)
	for i := range clients {
		clients[i], _ = mustSignUp(b, m.Addr(), fmt.Sprintf("member%03d", i))
	}
	var r room
	if st := clients[0].do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "group"}, &r); st != http.StatusCreated {
		b.Fatalf("create room: %d", st)
	}
	for _, c := range clients[1:] {
		if st := c.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
			b.Fatalf("join: %d", st)
		}
	}
	sessions := make([]*stompClient, members)
	for i, c := range clients {
		s := dialStomp(b, m, "websocket", c.token)
		s.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nreceipt:s\n\n\x00")
		s.expect("RECEIPT", "receipt-id:s")
		sessions[i] = s
	}

	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		problems  []string
		sent      int
	)
	stop := make(chan struct{})
	lastSeq := make(chan int64, members) // each sender's last receipted seq
	start := time.Now()
	for i, s := range sessions {
		// The reader: every MESSAGE, in seq order, no gap, no duplicate,
		// until it has seen the last seq sent.
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var want int64 = 1
			last := int64(-1)
			for last < 0 || want <= last {
				s.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
				f, err := s.r.Read()
				if err != nil {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("member %d: %v after seq %d", i, err, want-1))
					mu.Unlock()
					return
				}
				switch f.Command {
				case stomp.Message:
					seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
					if seq != want {
						mu.Lock()
						problems = append(problems, fmt.Sprintf("member %d: seq %d, want %d", i, seq, want))
						mu.Unlock()
						return
					}
					want++
					_, ts, _ := strings.Cut(string(f.Body), " ")
					if ns, err := strconv.ParseInt(ts, 10, 64); err == nil {
						mine = append(mine, time.Duration(time.Now().UnixNano()-ns))
					}
				case stomp.Receipt:
					// The sender's own receipts: the sender loop waits for
					// none, so they are only counted.
				case stomp.Error:
					mu.Lock()
					problems = append(problems, fmt.Sprintf("member %d: %v", i, f))
					mu.Unlock()
					return
				}
				if last < 0 {
					select {
					case last = <-lastSeq:
						lastSeq <- last // every reader needs it
					default:
					}
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	// The senders: one SEND every 1 to 3 s per member, receipted.
	var sendWG sync.WaitGroup
	var sendMu sync.Mutex
	for i, s := range sessions {
		sendWG.Add(1)
		go func() {
			defer sendWG.Done()
			time.Sleep(rand.N(3 * time.Second))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf("%d/%d %d", i, n, time.Now().UnixNano())
				sendMu.Lock()
				sent++
				sendMu.Unlock()
				if err := s.write(fmt.Sprintf("SEND\ndestination:/app/rooms.%s\nclient-id:%d-%d\n\n%s\x00", r.ID, i, n, body)); err != nil {
					b.Error(err)
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Second + rand.N(2*time.Second)):
				}
			}
		}()
	}
	time.Sleep(duration)
	close(stop)
	sendWG.Wait()
	// Every SEND is committed once its RECEIPT-less frame is read; the
	// room's last seq after a settle read from history is the total.
	time.Sleep(2 * time.Second)
	var page struct{ Messages []message }
	clients[0].do("GET", "/api/rooms/"+r.ID+"/messages?limit=1", nil, &page)
	total := int64(0)
	if len(page.Messages) > 0 {
		total = page.Messages[0].Seq
	}
	lastSeq <- total
	wg.Wait()
	elapsed := time.Since(start)

	if len(problems) > 0 {
		b.Fatalf("%d problems, first: %s", len(problems), problems[0])
	}
	if total != int64(sent) {
		b.Errorf("%d messages stored, %d sent", total, sent)
	}
	if want := int(total) * members; len(latencies) != want {
		b.Errorf("%d deliveries, want %d", len(latencies), want)
	}
	slices.Sort(latencies)
	q := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(total), "messages")
	b.ReportMetric(float64(len(latencies)), "deliveries")
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(serverP99(b, m), "server-p99-ms")
}

// serverP99 estimates the 99th percentile of the server's own delivery
// latency (commit → written to the socket) from its histogram buckets.
func serverP99(b *testing.B, m *Main) float64 {
	mfs, err := m.registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "parley_stomp_delivery_latency_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		target := 0.99 * float64(h.GetSampleCount())
		for _, bk := range h.GetBucket() {
			if float64(bk.GetCumulativeCount()) >= target {
				return bk.GetUpperBound() * 1000
			}
		}
	}
	return -1
}

// benchSync is the SQLite sync setting of BenchmarkGroupRoom:
// PARLEY_BENCH_SYNC, default full.
func benchSync() string {
	if s := os.Getenv("PARLEY_BENCH_SYNC"); s != "" {
		return s
	}
	return "full"
}
