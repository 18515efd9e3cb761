package sqlite_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"

	"parley"
	"parley/parleytest"
	"parley/sqlite"
)

// The shape of BenchmarkSearch: -search-rooms rooms of -search-history
// messages (the shape of parley bench search is 1,000 × 1,000).
var benchSearchRooms, benchSearchHistory = 1000, 100

func init() {
	flag.IntVar(&benchSearchRooms, "search-rooms", benchSearchRooms, "rooms of BenchmarkSearch")
	flag.IntVar(&benchSearchHistory, "search-history", benchSearchHistory, "messages a room of BenchmarkSearch")
}

// BenchmarkSearch searches the rooms of a user (Store.Search, a random word
// of the vocabulary, 20 hits a page) from concurrent readers, over
// -search-rooms rooms of -search-history messages of about 60 bytes of
// words drawn uniformly from 5,000: the shape of parley bench search
// (1,000 × 1,000 with -search-history 1000), without HTTP. users=20 is that
// bench's user, in 20 rooms; users in 250 and in every room show what the
// caller's number of rooms costs.
func BenchmarkSearch(b *testing.B) {
	nRooms, history := benchSearchRooms, benchSearchHistory
	s := mustOpen(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db"), Sync: sqlite.SyncOff})
	const nUsers = 100
	users := parleytest.MustCreateUsers(b, s, "user", nUsers)
	wide := parleytest.MustCreateUsers(b, s, "wide", 2) // in 250 rooms, in every room
	rooms := make([]parley.Room, nRooms)
	for i := range rooms {
		rooms[i] = parleytest.MustCreateRoom(b, s, users[i%nUsers], fmt.Sprint("room ", i), 0)
		parleytest.MustJoin(b, s, rooms[i], users[(i+nUsers-1)%nUsers])
		if i < 250 {
			parleytest.MustJoin(b, s, rooms[i], wide[0])
		}
		parleytest.MustJoin(b, s, rooms[i], wide[1])
	}
	parleytest.SendSearchHistory(b, s, rooms, users, history)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		users []parley.User
	}{
		{"rooms=20", users}, {"rooms=250", wide[:1]}, {fmt.Sprint("rooms=", nRooms), wide[1:]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var hits, n atomic.Int64
			q0, cpu0 := s.Queries(), cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := n.Add(1)
					u := tc.users[int(k)%len(tc.users)]
					q, err := parley.ParseQuery(parleytest.SearchWord(rand.IntN(parleytest.SearchVocabulary)))
					if err != nil {
						b.Error(err)
						return
					}
					hs, _, err := s.Search(ctx, u.ID, q, "", 20)
					if err != nil {
						b.Errorf("Search() error = %v", err)
						return
					}
					hits.Add(int64(len(hs)))
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "searches/s")
			b.ReportMetric(float64(hits.Load())/float64(b.N), "hits/op")
			b.ReportMetric(float64(s.Queries()-q0)/float64(b.N), "queries/op")
			b.ReportMetric((cpuTime()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/op")
		})
	}
}
