package cache_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"parley"
	"parley/cache"
	"parley/parleytest"
	"parley/sqlite"
)

// countingStore counts the searches that reach the store under the cache,
// and calls onPage, when set, after each history page it reads.
type countingStore struct {
	parley.Store
	searches atomic.Int64
	onPage   func()
}

func (c *countingStore) WaitIndexed(ctx context.Context) error {
	return parley.WaitIndexed(ctx, c.Store)
}

func (c *countingStore) SearchRoom(ctx context.Context, roomID string, q parley.Query, before int64, limit int) ([]parley.Message, error) {
	c.searches.Add(1)
	return c.Store.SearchRoom(ctx, roomID, q, before, limit)
}

func (c *countingStore) Search(ctx context.Context, userID string, q parley.Query, cursor string, limit int) ([]parley.SearchHit, string, error) {
	c.searches.Add(1)
	return c.Store.Search(ctx, userID, q, cursor, limit)
}

func (c *countingStore) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	page, err := c.Store.Messages(ctx, roomID, p)
	if c.onPage != nil {
		c.onPage()
	}
	return page, err
}

func openCounted(t *testing.T, cfg cache.Config) (*cache.Store, *sqlite.Store, *countingStore) {
	t.Helper()
	var counted *countingStore
	c, inner := openCachedSQLite(t, cfg, nil, func(s parley.Store) parley.Store {
		counted = &countingStore{Store: s}
		return counted
	})
	return c, inner, counted
}

// asJSON is how the comparisons see results: as a client would.
func asJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// allHits pages through a search to its end.
func allHits(t testing.TB, s parley.Store, userID string, q parley.Query, limit int) string {
	t.Helper()
	var b strings.Builder
	cursor := ""
	for range 1000 {
		hits, next, err := s.Search(ctx, userID, q, cursor, limit)
		if err != nil {
			t.Fatalf("Search(%s, %v, %q) error = %v", userID, q.Terms, cursor, err)
		}
		b.WriteString(asJSON(t, hits))
		b.WriteString(" next=" + next + "\n")
		if next == "" {
			return b.String()
		}
		cursor = next
	}
	t.Fatalf("Search(%s, %v) did not end", userID, q.Terms)
	return ""
}

// TestSearchWarmNeverReachesStore: once a user's rooms are indexed,
// searches over them and in one room never reach the store, while sends,
// edits and deletions change what they find.
func TestSearchWarmNeverReachesStore(t *testing.T) {
	c, _, counted := openCounted(t, cache.Config{})
	users := parleytest.MustCreateUsers(t, c, "u", 2)
	a, b := users[0], users[1]
	r1 := parleytest.MustCreateRoom(t, c, a, "one", 0)
	r2 := parleytest.MustCreateRoom(t, c, a, "two", 0)
	parleytest.MustJoin(t, c, r2, b)
	parleytest.MustSend(t, c, r1, a, "red apple")
	parleytest.MustSend(t, c, r2, b, "green apple")
	q := parleytest.MustQuery(t, "apple")
	if hits, _, err := c.Search(ctx, a.ID, q, "", 10); err != nil || len(hits) != 2 {
		t.Fatalf("Search(a, apple) = %d hits, %v; want 2", len(hits), err)
	}
	if _, err := c.SearchRoom(ctx, r2.ID, q, 0, 10); err != nil {
		t.Fatal(err)
	}
	counted.searches.Store(0)

	m3 := parleytest.MustSend(t, c, r1, a, "apple pie")
	parleytest.MustEdit(t, c, r2, b, 1, "green pear")
	parleytest.MustDelete(t, c, r1, a, 1)
	hits, _, err := c.Search(ctx, a.ID, q, "", 10)
	if err != nil || len(hits) != 1 || hits[0].Message.ID != m3.ID {
		t.Errorf("Search(a, apple) after send, edit, delete = %s, %v; want only %s", asJSON(t, hits), err, m3.ID)
	}
	if msgs, err := c.SearchRoom(ctx, r2.ID, parleytest.MustQuery(t, "pear green"), 0, 10); err != nil || len(msgs) != 1 || msgs[0].Body != "green pear" {
		t.Errorf("SearchRoom(two, pear green) = %s, %v; want the edit", asJSON(t, msgs), err)
	}
	if hits, _, err := c.Search(ctx, b.ID, parleytest.MustQuery(t, "pie"), "", 10); err != nil || len(hits) != 0 {
		t.Errorf("Search(b, pie) = %s, %v; want none: b is not in room one", asJSON(t, hits), err)
	}
	if n := counted.searches.Load(); n != 0 {
		t.Errorf("warm searches reached the store %d times, want 0", n)
	}
}

// TestSearchBuildRacesCommits: edits, deletions and sends committed while
// a room's index is being read from the store are in it once installed.
func TestSearchBuildRacesCommits(t *testing.T) {
	c, _, counted := openCounted(t, cache.Config{MaxRooms: 1})
	u := parleytest.MustCreateUser(t, c, "u")
	r := parleytest.MustCreateRoom(t, c, u, "r", 0)
	for i := range parley.MaxPageLimit + 5 { // two pages
		body := "filler"
		if i < 3 {
			body = "target"
		}
		parleytest.MustSend(t, c, r, u, body)
	}
	// Another room evicts r's state, and with it the index r had from its
	// creation: the next search builds it from the store.
	for range 3 {
		parleytest.MustCreateRoom(t, c, u, "other", 0)
	}
	var fired atomic.Bool
	counted.onPage = func() {
		if fired.Swap(true) {
			return
		}
		// After the first page is read: change what it holds, and add.
		parleytest.MustEdit(t, c, r, u, 1, "changed")
		parleytest.MustDelete(t, c, r, u, 2)
		parleytest.MustSend(t, c, r, u, "target late")
		parleytest.MustEdit(t, c, r, u, parley.MaxPageLimit+2, "target edited")
	}
	msgs, err := c.SearchRoom(ctx, r.ID, parleytest.MustQuery(t, "target"), 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	counted.onPage = nil
	if !fired.Load() {
		t.Fatal("the search read no history page: no build to race with")
	}
	counted.searches.Store(0)
	msgs, err = c.SearchRoom(ctx, r.ID, parleytest.MustQuery(t, "target"), 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, m := range msgs {
		got = append(got, m.Seq)
	}
	want := []int64{parley.MaxPageLimit + 6, parley.MaxPageLimit + 2, 3}
	if asJSON(t, got) != asJSON(t, want) {
		t.Errorf("SearchRoom(target) after a racing build = seqs %v, want %v", got, want)
	}
	if n := counted.searches.Load(); n != 0 {
		t.Errorf("the second search reached the store %d times, want 0 (index not installed)", n)
	}
	if msgs, _ := c.SearchRoom(ctx, r.ID, parleytest.MustQuery(t, "changed"), 0, 50); len(msgs) != 1 || msgs[0].Seq != 1 {
		t.Errorf("SearchRoom(changed) = %s, want seq 1", asJSON(t, msgs))
	}
}

// TestSearchDifferential: random sends, edits, deletions, joins and leaves
// in a few rooms (a direct one among them); after each round the cache's
// Search and SearchRoom, warm and cold, answer exactly as the store does,
// for random queries and page sizes.
func TestSearchDifferential(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  cache.Config
	}{
		{"defaults", cache.Config{}},
		{"tiny budget", cache.Config{SearchBytes: 6 << 10}}, // a room or two: builds, drops, falls back
		{"evicting", cache.Config{RecentMessages: 3, MaxRooms: 2, MaxUsers: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			differential(t, tc.cfg, rand.New(rand.NewPCG(1, uint64(len(tc.name)))))
		})
	}
}

func differential(t *testing.T, cfg cache.Config, rng *rand.Rand) {
	c, inner, counted := openCounted(t, cfg)
	vocab := []string{"apple", "Pear", "fox", "dog", "안녕", "회의", "x1", "Zed", "zed", "the"}
	users := parleytest.MustCreateUsers(t, c, "u", 4)
	var rooms []parley.Room
	for i := range 3 {
		rooms = append(rooms, parleytest.MustCreateRoom(t, c, users[i], "room", 0))
	}
	direct, _, err := c.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: users[0].ID, PeerID: users[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	rooms = append(rooms, direct)
	type sent struct {
		room   parley.Room
		sender parley.User
		seq    int64
	}
	var msgs []sent
	body := func() string {
		var w []string
		for range 1 + rng.IntN(4) {
			w = append(w, vocab[rng.IntN(len(vocab))])
		}
		return strings.Join(w, []string{" ", ", ", "-", "!"}[rng.IntN(4)])
	}
	query := func() parley.Query {
		s := vocab[rng.IntN(len(vocab))]
		if rng.IntN(3) == 0 {
			s += " " + vocab[rng.IntN(len(vocab))]
		}
		return parleytest.MustQuery(t, s)
	}
	compare := func(round int) {
		t.Helper()
		if err := cache.CheckSearchIndexes(c); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		cold := cache.New(inner, cfg) // nothing applied: reads it all afresh
		for range 6 {
			u := users[rng.IntN(len(users))]
			q, limit := query(), 1+rng.IntN(5)
			want := allHits(t, inner, u.ID, q, limit)
			if got := allHits(t, c, u.ID, q, limit); got != want {
				t.Fatalf("round %d: Search(%s, %v, limit %d):\ncache %s\nstore %s", round, u.Name, q.Terms, limit, got, want)
			}
			if got := allHits(t, cold, u.ID, q, limit); got != want {
				t.Fatalf("round %d: cold Search(%s, %v, limit %d):\ncache %s\nstore %s", round, u.Name, q.Terms, limit, got, want)
			}
			r := rooms[rng.IntN(len(rooms))]
			before := int64(rng.IntN(int(r.LastSeq) + 5))
			for _, s := range []parley.Store{c, cold} {
				w, err1 := inner.SearchRoom(ctx, r.ID, q, before, limit)
				g, err2 := s.SearchRoom(ctx, r.ID, q, before, limit)
				if asJSON(t, g) != asJSON(t, w) || (err1 == nil) != (err2 == nil) {
					t.Fatalf("round %d: SearchRoom(%v, before %d, limit %d) = %s, %v; store %s, %v", round, q.Terms, before, limit, asJSON(t, g), err2, asJSON(t, w), err1)
				}
			}
		}
	}
	for _, r := range rooms[:3] {
		for _, u := range users {
			c.Join(ctx, r.ID, u.ID)
		}
	}
	for round := range 25 {
		for range 15 {
			switch op := rng.IntN(20); {
			case op < 11 || len(msgs) == 0:
				r := rooms[rng.IntN(len(rooms))]
				ids, _ := c.Members(ctx, r.ID)
				if len(ids) == 0 {
					continue
				}
				sender := users[0]
				for _, u := range users {
					if u.ID == ids[rng.IntN(len(ids))] {
						sender = u
					}
				}
				m, _, err := c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: sender.ID, Body: body()})
				if err != nil {
					continue // the sender left meanwhile
				}
				msgs = append(msgs, sent{r, sender, m.Seq})
			case op < 15:
				m := msgs[rng.IntN(len(msgs))]
				c.EditMessage(ctx, parley.Edit{RoomID: m.room.ID, Seq: m.seq, EditorID: m.sender.ID, Body: body()})
			case op < 17:
				m := msgs[rng.IntN(len(msgs))]
				c.DeleteMessage(ctx, parley.Deletion{RoomID: m.room.ID, Seq: m.seq, ActorID: m.sender.ID})
			case op < 19:
				c.Leave(ctx, rooms[rng.IntN(3)].ID, users[rng.IntN(len(users))].ID)
			default:
				c.Join(ctx, rooms[rng.IntN(3)].ID, users[rng.IntN(len(users))].ID)
			}
		}
		for i := range rooms {
			rooms[i], _ = c.Room(ctx, rooms[i].ID)
		}
		parleytest.WaitIndexed(t, inner) // the store's index trails its commits
		compare(round)
	}
	// Every word leaves the dictionary with the last index holding it.
	cache.DropSearchIndexes(c)
	if n, used := cache.SearchDictWords(c), cache.SearchBytesUsed(c); n != 0 || used != 0 {
		t.Errorf("with every index dropped: %d words in the dictionary, %d bytes used; want 0, 0", n, used)
	}
	if cfg.SearchBytes == 0 && cfg.MaxRooms == 0 {
		// With room to spare, every search of c was served from memory:
		// the store's searches counted are the comparisons' own (none: they
		// call inner directly) and the cold caches' (they wrap inner, not
		// counted).
		if n := counted.searches.Load(); n != 0 {
			t.Errorf("the warm cache sent %d searches to the store, want 0", n)
		}
	}
}

// TestSearchConcurrent: searches (building the indexes, cold) run while
// messages are sent, edited and deleted; once the writers stop, the
// cache's answers are the store's.
func TestSearchConcurrent(t *testing.T) {
	c, inner, _ := openCounted(t, cache.Config{})
	users := parleytest.MustCreateUsers(t, c, "u", 3)
	var rooms []parley.Room
	for i := range 4 {
		r := parleytest.MustCreateRoom(t, c, users[0], "room", 0)
		for _, u := range users[1:] {
			parleytest.MustJoin(t, c, r, u)
		}
		rooms = append(rooms, r)
		for j := range 150 {
			parleytest.MustSend(t, c, r, users[j%3], []string{"alpha beta", "beta", "gamma alpha"}[(i+j)%3])
		}
	}
	done := make(chan struct{})
	errs := make(chan error, 8)
	go func() {
		defer close(done)
		for i := range 300 {
			r, u := rooms[i%4], users[i%3]
			switch i % 3 {
			case 0:
				_, _, err := c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, Body: "alpha late"})
				errs <- err
			case 1:
				_, err := c.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: int64(1 + i), EditorID: users[(i)%3].ID, Body: "beta edited"})
				errs <- err
			case 2:
				_, _, err := c.DeleteMessage(ctx, parley.Deletion{RoomID: r.ID, Seq: int64(2 + i), ActorID: users[0].ID, Moderator: true})
				errs <- err
			}
			<-errs
		}
	}()
	searchers := make(chan struct{})
	for k := range 4 {
		go func() {
			defer func() { searchers <- struct{}{} }()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				q := parleytest.MustQuery(t, []string{"alpha", "beta", "gamma", "edited"}[(i+k)%4])
				if i%2 == 0 {
					c.Search(ctx, users[k%3].ID, q, "", 20)
				} else {
					c.SearchRoom(ctx, rooms[(i+k)%4].ID, q, 0, 20)
				}
			}
		}()
	}
	<-done
	for range 4 {
		<-searchers
	}
	parleytest.WaitIndexed(t, inner) // the store's index trails its commits
	for _, w := range []string{"alpha", "beta", "gamma", "edited", "late", "alpha beta"} {
		q := parleytest.MustQuery(t, w)
		for _, u := range users {
			if got, want := allHits(t, c, u.ID, q, 17), allHits(t, inner, u.ID, q, 17); got != want {
				t.Fatalf("Search(%s, %q) after concurrent writes:\ncache %s\nstore %s", u.Name, w, got, want)
			}
		}
		for _, r := range rooms {
			g, _ := c.SearchRoom(ctx, r.ID, q, 0, 100)
			w2, _ := inner.SearchRoom(ctx, r.ID, q, 0, 100)
			if asJSON(t, g) != asJSON(t, w2) {
				t.Fatalf("SearchRoom(%q) after concurrent writes differs from the store", w)
			}
		}
	}
}

// totalSearches counts the searches made of the cache.
type totalSearches struct {
	parley.Store
	n *atomic.Int64
}

func (c *totalSearches) WaitIndexed(ctx context.Context) error {
	return parley.WaitIndexed(ctx, c.Store)
}

func (c *totalSearches) SearchRoom(ctx context.Context, roomID string, q parley.Query, before int64, limit int) ([]parley.Message, error) {
	c.n.Add(1)
	return c.Store.SearchRoom(ctx, roomID, q, before, limit)
}

func (c *totalSearches) Search(ctx context.Context, userID string, q parley.Query, cursor string, limit int) ([]parley.SearchHit, string, error) {
	c.n.Add(1)
	return c.Store.Search(ctx, userID, q, cursor, limit)
}

// pageKeeper remembers every history page the cache read from the store
// under it, and where each message's RoomID pointed when it was handed
// over.
type pageKeeper struct {
	parley.Store
	mu    sync.Mutex
	pages [][]parley.Message
	rooms [][]*byte
}

func (k *pageKeeper) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	page, err := k.Store.Messages(ctx, roomID, p)
	ptrs := make([]*byte, len(page))
	for i := range page {
		ptrs[i] = unsafe.StringData(page[i].RoomID)
	}
	k.mu.Lock()
	k.pages, k.rooms = append(k.pages, page), append(k.rooms, ptrs)
	k.mu.Unlock()
	return page, err
}

// TestSearchBuildLeavesStorePagesAlone: building a room's index reads its
// history from the store and leaves the pages as the store returned them
// (parley.Store's results are read-only: a store may share them).
func TestSearchBuildLeavesStorePagesAlone(t *testing.T) {
	var kept *pageKeeper
	c, _ := openCachedSQLite(t, cache.Config{}, nil, func(s parley.Store) parley.Store {
		kept = &pageKeeper{Store: s}
		return kept
	})
	a := parleytest.MustCreateUsers(t, c, "u", 1)[0]
	r := parleytest.MustCreateRoom(t, c, a, "one", 0)
	for _, body := range []string{"red apple", "green apple", "apple pie"} {
		parleytest.MustSend(t, c, r, a, body)
	}
	if msgs, err := c.SearchRoom(ctx, r.ID, parleytest.MustQuery(t, "apple"), 0, 10); err != nil || len(msgs) != 3 {
		t.Fatalf("SearchRoom(apple) = %d messages, %v; want 3", len(msgs), err)
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if len(kept.pages) == 0 {
		t.Fatal("the index was not read from the store's pages")
	}
	for i, page := range kept.pages {
		for j := range page {
			if unsafe.StringData(page[j].RoomID) != kept.rooms[i][j] {
				t.Fatalf("page %d, message %d: its RoomID was written after the store returned it", i, j)
			}
		}
	}
}
