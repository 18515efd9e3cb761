package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
)

// searchWords is the vocabulary of the search scenario's messages: each
// body is Payload bytes of words drawn uniformly from it, so that a word is
// in about Rooms × HistorySize × (words per body) / searchWords messages.
const searchWords = 5000

// word returns the vocabulary's word i.
func word(i int) string { return "w" + strconv.FormatInt(int64(i), 36) }

// searchBody returns a body of about n bytes of words from the vocabulary.
func searchBody(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(word(rng.IntN(searchWords)))
	}
	return b.String()
}

// search: Users users search their rooms over a large history. Rooms group
// rooms in all: user i creates the rooms i, i+Users, ... and joins the
// rooms of user i+1, so each room has two members and each user is in
// about 2 × Rooms / Users rooms. Each room gets HistorySize messages of
// random words, posted by its two members in turn, and every user
// searches once (not measured). Then every user asks
// GET /api/me/search?q=<a random word>&limit=PageSize in a loop.
func (r *run) search(ctx context.Context) error {
	accs, err := r.signUp(ctx, r.o.Users)
	if err != nil {
		return err
	}
	n := len(accs)
	rooms := make([]roomInfo, r.o.Rooms)
	r.setPhase("setup", int64(len(rooms)), 0)
	err = parallel(ctx, len(rooms), r.o.SetupConcurrency, func(ctx context.Context, i int) error {
		var err error
		rooms[i], err = accs[i%n].createGroup(ctx, fmt.Sprintf("search %d", i), 0)
		r.done.Add(1)
		return err
	})
	if err != nil {
		return err
	}
	if n > 1 {
		r.setPhase("setup", int64(len(rooms)), 0)
		err = parallel(ctx, len(rooms), r.o.SetupConcurrency*4, func(ctx context.Context, i int) error {
			r.done.Add(1)
			return accs[(i+n-1)%n].join(ctx, rooms[i].ID)
		})
		if err != nil {
			return err
		}
	}
	total := len(rooms) * r.o.HistorySize
	r.setPhase("setup", int64(total), 0)
	err = parallel(ctx, total, r.o.SetupConcurrency*4, func(ctx context.Context, k int) error {
		i, j := k%len(rooms), k/len(rooms)
		sender := accs[i%n]
		if j%2 == 1 && n > 1 {
			sender = accs[(i+n-1)%n]
		}
		rng := rand.New(rand.NewPCG(uint64(i), uint64(j)))
		r.done.Add(1)
		return sender.post(ctx, rooms[i].ID, searchBody(rng, r.o.Payload))
	})
	if err != nil {
		return err
	}
	limit := strconv.Itoa(min(r.o.PageSize, 100))
	// One search a user before measuring: a server that keeps searches in
	// memory builds a room's index on its first search (Parley's cache),
	// and the scenario measures searches of rooms already searched.
	r.setPhase("setup", int64(n), 0)
	err = parallel(ctx, n, r.o.SetupConcurrency, func(ctx context.Context, u int) error {
		r.done.Add(1)
		if _, kind := accs[u].node.hit(ctx, "GET", "/api/me/search?limit="+limit+"&q="+word(u), accs[u].Token); kind != "" {
			return fmt.Errorf("first search of user %d: %s", u, kind)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.res.Unit = "search"
	start := r.startMeasure(int64(r.o.Users * r.o.Loops))
	r.loop(ctx, r.o.Users, r.o.Loops, start.Add(r.o.Duration), func(ctx context.Context, u, i int) string {
		w := word(int(rand.Uint64N(searchWords)))
		_, kind := accs[u].node.hit(ctx, "GET", "/api/me/search?limit="+limit+"&q="+url.QueryEscape(w), accs[u].Token)
		return kind
	})
	r.stopMeasure(start)
	return nil
}
