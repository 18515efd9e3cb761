package cache_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"parley"
	"parley/cache"
	"parley/parleytest"
)

// benchSetup makes users who are all members of the same rooms, each with
// msgs messages, in a cache over SQLite. reads counts the reads that reach
// SQLite.
func benchSetup(b *testing.B, users, rooms, msgs int) (c *cache.Store, reads func() uint64, us []parley.User, rs []parley.Room) {
	b.Helper()
	var cnt *counting
	c, _ = openCachedSQLite(b, cache.Config{}, nil, func(s parley.Store) parley.Store {
		cnt = newCounting(s)
		return cnt
	})
	us = parleytest.MustCreateUsers(b, c, "user", users)
	rs = make([]parley.Room, rooms)
	for i := range rs {
		rs[i] = parleytest.MustCreateRoom(b, c, us[0], fmt.Sprint("room", i), 0)
		for _, u := range us[1:] {
			parleytest.MustJoin(b, c, rs[i], u)
		}
		for j := range msgs {
			parleytest.MustSend(b, c, rs[i], us[j%users], fmt.Sprintf("message %d of room %d", j, i))
		}
	}
	return c, func() uint64 { return uint64(cnt.total.Load()) }, us, rs
}

// sendUntil runs senders that send messages to the rooms until stop is
// closed, as fast as the store commits them, and returns how many they sent.
func sendUntil(c *cache.Store, users []parley.User, rooms []parley.Room, stop <-chan struct{}) <-chan int {
	const senders = 8
	var total atomic.Int64
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for n := w; ; n += senders {
				select {
				case <-stop:
					return
				default:
				}
				r, u := rooms[n%len(rooms)], users[n%len(users)]
				c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: "traffic"})
				total.Add(1)
			}
		})
	}
	sent := make(chan int, 1)
	go func() {
		wg.Wait()
		sent <- int(total.Load())
	}()
	return sent
}

// meter measures the timed part of a benchmark: the reads that reached
// SQLite and the CPU time the process used, so that a loaded machine (other
// processes on the same cores) still gives a per-op cost.
type meter struct {
	queries func() uint64
	q0      uint64
	cpu0    time.Duration
}

func startMeter(b *testing.B, queries func() uint64) *meter {
	b.ReportAllocs()
	m := &meter{queries: queries, q0: queries(), cpu0: cpuTime()}
	b.ResetTimer()
	return m
}

// stop reports ops/s (wall clock), CPU ns per op and the inner reads.
func (m *meter) stop(b *testing.B) {
	b.StopTimer()
	cpu := cpuTime() - m.cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(m.queries()-m.q0), "inner-reads")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRooms is the room list (seed 001): a member of 50 rooms asks for
// a page of 50, from every core at once. "idle" is the steady state of a
// room list polled while nothing changes (the first page is shared); "busy"
// has writers sending to the rooms meanwhile (msgs/s reports their rate), so
// that lists are rebuilt; "page2" asks for the second page of 25, which is
// built afresh on every call.
func BenchmarkRooms(b *testing.B) {
	for _, tc := range []struct {
		name  string
		busy  bool
		limit int
		page2 bool
	}{
		{"idle", false, 50, false},
		{"busy", true, 50, false},
		{"page2", false, 25, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, reads, users, rooms := benchSetup(b, 16, 50, 2)
			cursors := make([]string, len(users))
			for i, u := range users {
				list, next, err := c.Rooms(ctx, u.ID, "", tc.limit)
				if err != nil || len(list) != tc.limit {
					b.Fatalf("Rooms = %d entries, %v; want %d", len(list), err, tc.limit)
				}
				if tc.page2 {
					cursors[i] = next
				}
			}
			var next atomic.Int64
			stop := make(chan struct{})
			var sent <-chan int
			if tc.busy {
				sent = sendUntil(c, users, rooms, stop)
			}
			m := startMeter(b, reads)
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1)) % len(users)
				u, cursor := users[i], cursors[i]
				for pb.Next() {
					if _, _, err := c.Rooms(ctx, u.ID, cursor, tc.limit); err != nil {
						b.Error(err)
						return
					}
				}
			})
			m.stop(b)
			close(stop)
			if tc.busy {
				b.ReportMetric(float64(<-sent)/b.Elapsed().Seconds(), "msgs/s")
			}
		})
	}
}

// BenchmarkNewestPage is "open chat" (seed 004): the newest 50 messages of a
// room, from every core at once; "busy" as in BenchmarkRooms.
func BenchmarkNewestPage(b *testing.B) {
	for _, busy := range []bool{false, true} {
		b.Run(map[bool]string{false: "idle", true: "busy"}[busy], func(b *testing.B) {
			c, reads, users, rooms := benchSetup(b, 4, 8, 120)
			for _, r := range rooms {
				if page, err := c.Messages(ctx, r.ID, parley.Newest(50)); err != nil || len(page) != 50 {
					b.Fatalf("Messages = %d messages, %v; want 50", len(page), err)
				}
			}
			var next atomic.Int64
			stop := make(chan struct{})
			var sent <-chan int
			if busy {
				sent = sendUntil(c, users, rooms, stop)
			}
			m := startMeter(b, reads)
			b.RunParallel(func(pb *testing.PB) {
				r := rooms[int(next.Add(1))%len(rooms)]
				for pb.Next() {
					if _, err := c.Messages(ctx, r.ID, parley.Newest(50)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			m.stop(b)
			close(stop)
			if busy {
				b.ReportMetric(float64(<-sent)/b.Elapsed().Seconds(), "msgs/s")
			}
		})
	}
}
