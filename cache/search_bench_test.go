package cache_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

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
// which reads the user's 20 rooms from SQLite and indexes them.
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
