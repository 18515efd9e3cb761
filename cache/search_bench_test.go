package cache_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/cache"
	"parley/parleytest"
)

var benchSearchHistory = 100

func init() {
	flag.IntVar(&benchSearchHistory, "search-history", benchSearchHistory, "messages a room of BenchmarkSearch (1000: parley bench search's million)")
}

// BenchmarkSearch is sqlite's BenchmarkSearch (1,000 rooms of
// -search-history messages of ~60 bytes of words drawn from 5,000; a user
// in 20 rooms searching a random word, 20 hits a page) through the cache:
// warm is the memory index kept since the rooms were created; cold-build
// is the first search of each user in a fresh cache over the same store,
// which reads the user's 20 rooms from SQLite and indexes them. (warm
// searches once for each user before it is timed: only a search builds
// an index.)
func BenchmarkSearch(b *testing.B) {
	const nRooms, nUsers = 1000, 100
	c, inner := openCachedSQLite(b, cache.Config{}, nil, nil)
	users := parleytest.MustCreateUsers(b, c, "user", nUsers)
	rooms := make([]parley.Room, nRooms)
	for i := range rooms {
		rooms[i] = parleytest.MustCreateRoom(b, c, users[i%nUsers], fmt.Sprint("room ", i), 0)
		parleytest.MustJoin(b, c, rooms[i], users[(i+nUsers-1)%nUsers])
	}
	parleytest.SendSearchHistory(b, c, rooms, users, benchSearchHistory)
	ctx := context.Background()
	search := func(b *testing.B, s parley.Store, u parley.User) int {
		q, _ := parley.ParseQuery(parleytest.SearchWord(rand.IntN(parleytest.SearchVocabulary)))
		hs, _, err := s.Search(ctx, u.ID, q, "", 20)
		if err != nil {
			b.Fatalf("Search() error = %v", err)
		}
		return len(hs)
	}
	b.Run("warm", func(b *testing.B) {
		for _, u := range users {
			search(b, c, u)
		}
		var hits, n atomic.Int64
		cpu0 := cpuTime()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				hits.Add(int64(search(b, c, users[int(n.Add(1))%nUsers])))
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "searches/s")
		b.ReportMetric(float64(hits.Load())/float64(b.N), "hits/op")
		b.ReportMetric((cpuTime()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/op")
	})
	b.Run("cold-build", func(b *testing.B) {
		cpu0 := cpuTime()
		var cold *cache.Store
		for i := range b.N {
			if i%nUsers == 0 {
				cold = cache.New(inner, cache.Config{})
			}
			search(b, cold, users[i%nUsers])
		}
		b.ReportMetric((cpuTime()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/op")
	})
}

// BenchmarkApplySend is the cache's share of a send's cost: Apply of one
// committed message of ~60 bytes of words, as the inner store's writer
// calls it, into one of 100 rooms, each searched once before (indexed:
// the search index keeps them), never searched, and with the indexes off
// (budget < 0). The difference is what indexing adds to the writer per
// message.
func BenchmarkApplySend(b *testing.B) {
	for _, bc := range []struct {
		name   string
		budget int64
		search bool
	}{{"indexed", 0, true}, {"unsearched", 0, false}, {"index=off", -1, false}} {
		b.Run(bc.name, func(b *testing.B) {
			c, _ := openCachedSQLite(b, cache.Config{SearchBytes: bc.budget}, nil, nil)
			u := parleytest.MustCreateUsers(b, c, "user", 1)[0]
			rooms := make([]parley.Room, 100)
			for i := range rooms {
				rooms[i] = parleytest.MustCreateRoom(b, c, u, fmt.Sprint("room ", i), 0)
				if bc.search {
					if _, err := c.SearchRoom(ctx, rooms[i].ID, parleytest.MustQuery(b, "word"), 0, 1); err != nil {
						b.Fatal(err)
					}
				}
			}
			bodies := make([]string, 1024)
			for i := range bodies {
				bodies[i] = parleytest.SearchBody(i, 0)
			}
			at := time.Now().UTC()
			ev := make([]parley.Event, 1)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				room := &rooms[i%len(rooms)]
				room.LastSeq++
				ev[0] = parley.Event{Kind: parley.EventMessage, Room: *room, Message: parley.Message{
					ID: fmt.Sprint(room.ID, "-", room.LastSeq), RoomID: room.ID, Seq: room.LastSeq,
					SenderID: u.ID, SenderName: u.Name, Body: bodies[i%len(bodies)], SentAt: at,
				}}
				c.Apply(ev)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
