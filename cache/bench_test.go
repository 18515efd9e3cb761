package cache_test

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"parley"
	"parley/cache"
	"parley/parleytest"
)

// benchSetup makes users who are all members of the same rooms, each with
// msgs messages, in a cache over SQLite.
func benchSetup(b *testing.B, users, rooms, msgs int) (*cache.Store, func() uint64, []parley.User, []parley.Room) {
	b.Helper()
	c, inner := openCachedSQLite(b, cache.Config{}, nil, nil)
	us := parleytest.MustCreateUsers(b, c, "user", users)
	rs := make([]parley.Room, rooms)
	for i := range rs {
		rs[i] = parleytest.MustCreateRoom(b, c, us[0], fmt.Sprint("room", i), 0)
		for _, u := range us[1:] {
			parleytest.MustJoin(b, c, rs[i], u)
		}
		for j := range msgs {
			parleytest.MustSend(b, c, rs[i], us[j%users], fmt.Sprintf("message %d of room %d", j, i))
		}
	}
	return c, inner.Queries, us, rs
}

// meter measures the timed part of a benchmark: the queries that reached
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

// stop reports ops/s (wall clock), CPU ns per op and the inner queries.
func (m *meter) stop(b *testing.B) {
	b.StopTimer()
	cpu := cpuTime() - m.cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(m.queries()-m.q0), "inner-queries")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRooms is the room list (seed 001): a member of 50 rooms asks for
// a page of 50, from every core at once.
func BenchmarkRooms(b *testing.B) {
	c, queries, users, _ := benchSetup(b, 16, 50, 2)
	for _, u := range users {
		if list, _, err := c.Rooms(ctx, u.ID, "", 50); err != nil || len(list) != 50 {
			b.Fatalf("Rooms = %d entries, %v; want 50", len(list), err)
		}
	}
	var next atomic.Int64
	m := startMeter(b, queries)
	b.RunParallel(func(pb *testing.PB) {
		u := users[int(next.Add(1))%len(users)]
		for pb.Next() {
			if _, _, err := c.Rooms(ctx, u.ID, "", 50); err != nil {
				b.Error(err)
				return
			}
		}
	})
	m.stop(b)
}

// BenchmarkNewestPage is "open chat" (seed 004): the newest 50 messages of a
// room, from every core at once.
func BenchmarkNewestPage(b *testing.B) {
	c, queries, _, rooms := benchSetup(b, 4, 8, 120)
	for _, r := range rooms {
		if page, err := c.Messages(ctx, r.ID, parley.Newest(50)); err != nil || len(page) != 50 {
			b.Fatalf("Messages = %d messages, %v; want 50", len(page), err)
		}
	}
	var next atomic.Int64
	m := startMeter(b, queries)
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
}
