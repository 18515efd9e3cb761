package cache_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"parley"
	"parley/cache"
	"parley/parleytest"
)

// BenchmarkSearchMemory measures the heap the search index keeps per
// message: b.N messages of ~60 bytes of words (SearchBody, every string a
// fresh copy, as the store's reads and the writer's events give them) are
// applied to 100 rooms, each searched once before (indexed) or with the
// indexes off (off: what the rest of the cache keeps, a window per room).
// Then each room is searched once, which files the words of its messages
// if Apply left that to the next search. apply-cpu-ns/msg is the CPU of
// the Apply calls (the writer's, under the cache's lock), search-cpu-ns/msg
// the CPU of those searches per message; heap-B/msg is the live heap
// after them and a GC, less the one before the sends; est-B/msg the
// indexes' own estimate (what Config.SearchBytes bounds); gc-cpu-ms the
// CPU of one more full collection then (mostly marking: what the index's
// pointers cost the collector each cycle).
// The index's cost is indexed's heap-B/msg less off's. Run it with a fixed
// count: -benchtime 200000x.
func BenchmarkSearchMemory(b *testing.B) {
	for _, bc := range []struct {
		name   string
		budget int64
	}{{"indexed", 1 << 40}, {"off", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			c, _ := openCachedSQLite(b, cache.Config{SearchBytes: bc.budget}, nil, nil)
			u := parleytest.MustCreateUsers(b, c, "user", 1)[0]
			rooms := make([]parley.Room, 100)
			for i := range rooms {
				rooms[i] = parleytest.MustCreateRoom(b, c, u, fmt.Sprint("room ", i), 0)
				if _, err := c.SearchRoom(ctx, rooms[i].ID, parleytest.MustQuery(b, "word"), 0, 1); err != nil {
					b.Fatal(err)
				}
			}
			bodies := make([]string, 1024)
			for i := range bodies {
				bodies[i] = parleytest.SearchBody(i, 0)
			}
			at := time.Now().UTC().Round(time.Microsecond)
			heap := func() uint64 {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			est0 := cache.SearchBytesUsed(c)
			h0 := heap()
			cpu0 := cpuTime()
			b.ResetTimer()
			ev := make([]parley.Event, 1)
			for i := range b.N {
				room := &rooms[i%len(rooms)]
				room.LastSeq++
				ev[0] = parley.Event{Kind: parley.EventMessage, Room: *room, Message: parley.Message{
					ID: fmt.Sprint(room.ID, "-", room.LastSeq), RoomID: room.ID, Seq: room.LastSeq,
					SenderID: strings.Clone(u.ID), SenderName: strings.Clone(u.Name),
					Body: strings.Clone(bodies[i%len(bodies)]), ClientID: fmt.Sprint("c", i),
					SentAt: at.Add(time.Duration(i) * time.Microsecond),
				}}
				c.Apply(ev)
			}
			b.StopTimer()
			cpu1 := cpuTime()
			q := parleytest.MustQuery(b, parleytest.SearchWord(1))
			for i := range rooms {
				if _, err := c.SearchRoom(ctx, rooms[i].ID, q, 0, 20); err != nil {
					b.Fatal(err)
				}
			}
			cpu2 := cpuTime()
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "apply-cpu-ns/msg")
			b.ReportMetric(float64((cpu2-cpu1).Nanoseconds())/float64(b.N), "search-cpu-ns/msg")
			est := cache.SearchBytesUsed(c)
			h1 := heap()
			cpu3 := cpuTime()
			runtime.GC()
			b.ReportMetric(float64((cpuTime()-cpu3).Microseconds())/1000, "gc-cpu-ms")
			b.ReportMetric((float64(h1)-float64(h0))/float64(b.N), "heap-B/msg")
			b.ReportMetric(float64(est-est0)/float64(b.N), "est-B/msg")
			runtime.KeepAlive(c)
		})
	}
}
