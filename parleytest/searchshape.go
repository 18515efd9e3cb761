package parleytest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"parley"
)

// The search benchmarks' messages (sqlite's and cache's BenchmarkSearch,
// sqlite's BenchmarkSearchShapes) have the shape of parley bench search
// (loadgen/search.go): about 60 bytes of words drawn uniformly from
// SearchVocabulary.

// SearchVocabulary is the number of words the search benchmarks draw from.
const SearchVocabulary = 5000

// SearchWord is word i of the search benchmarks' vocabulary.
func SearchWord(i int) string { return "w" + strconv.FormatInt(int64(i), 36) }

// SearchBody is the body of message j of room i: the same for both
// arguments on every run.
func SearchBody(i, j int) string {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(j)))
	var body strings.Builder
	for body.Len() < 60 {
		if body.Len() > 0 {
			body.WriteByte(' ')
		}
		body.WriteString(SearchWord(rng.IntN(SearchVocabulary)))
	}
	return body.String()
}

// SendSearchHistory sends history messages to each of rooms (SearchBody),
// from 64 goroutines: room i's even messages from users[i%len(users)], its
// odd ones from users[(i+len(users)-1)%len(users)], the two members
// search benchmarks give each room. It fails tb at the first refused send,
// and returns once the store's search index holds them all (WaitIndexed).
func SendSearchHistory(tb testing.TB, s parley.Store, rooms []parley.Room, users []parley.User, history int) {
	tb.Helper()
	ctx := context.Background()
	n := len(users)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(rooms)*history {
					return
				}
				i, j := k%len(rooms), k/len(rooms)
				u := users[i%n]
				if j%2 == 1 {
					u = users[(i+n-1)%n]
				}
				if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: rooms[i].ID, SenderID: u.ID, SenderName: u.Name, Body: SearchBody(i, j)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatalf("Send() error = %v", err)
	}
	WaitIndexed(tb, s)
}
