package history

import (
	"container/list"
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
)

// Defaults for the zero fields of Config.
const (
	DefaultBlockSize = parley.MaxPageLimit
	DefaultMaxBytes  = 64 << 20
)

// messageOverhead is what a cached message takes besides its strings: the
// struct, the string headers, the time.
const messageOverhead = 160

// maxRoomsKnown bounds the rooms whose last seq is remembered.
const maxRoomsKnown = 100_000

// Config tunes a Store. Zero fields take the defaults above.
type Config struct {
	// BlockSize is the messages of one block, the unit of loading and
	// eviction. At least parley.MaxPageLimit, so that a page spans at
	// most two blocks.
	BlockSize int
	// MaxBytes bounds the memory of the blocks kept, over all rooms
	// (estimated).
	MaxBytes int
	// Registerer, when not nil, gets parley_history_requests_total{result}.
	Registerer prometheus.Registerer
	// Shared is set when other nodes write the inner store (cluster
	// mode): a cached block is checked against its room's LastChange
	// before it serves a page (see fresh).
	Shared bool
}

// Store is a parley.Store that serves the pages inside full blocks from
// memory. Create it with New.
type Store struct {
	parley.Store // the inner store: everything but cached pages

	size    int64
	max     int // bytes
	shared  bool
	hits    prometheus.Counter
	misses  prometheus.Counter
	passing prometheus.Counter

	mu      sync.Mutex // guards the following fields
	blocks  map[blockKey]*list.Element
	rooms   map[string]map[int64]*list.Element // the blocks by room
	lru     *list.List                         // of *block, most recently used at the front
	bytes   int                                // the blocks' estimated size
	loading map[blockKey]*load
	known   map[string]int64 // room -> a seq known to be committed (its last seq, when read)
	changes uint64           // edits and deletions applied (edits.go)
}

var _ parley.Store = (*Store)(nil)

type blockKey struct {
	room  string
	index int64 // seqs index·size+1 to (index+1)·size
}

type block struct {
	key   blockKey
	msgs  []parley.Message // newest first, exactly size of them
	bytes int
	// change is a number of the room's changes that msgs has every one
	// of, up to and with: the room's LastChange read before the block
	// was, and moved on by fresh and Apply (Config.Shared only). Store.mu
	// guards it.
	change int64
}

// load is a block being read from the inner store; done is closed when
// msgs and err are set.
type load struct {
	done chan struct{}
	msgs []parley.Message // newest first; nil when the block is not full
	err  error
}

// New returns a Store over inner.
func New(inner parley.Store, cfg Config) *Store {
	size := max(cfg.BlockSize, parley.MaxPageLimit)
	if cfg.BlockSize == 0 {
		size = DefaultBlockSize
	}
	maxBytes := cfg.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_history_requests_total",
		Help: "History pages asked of the older-history cache, by result (hit: from memory; miss: a block was loaded; pass: not in full blocks, to the inner store).",
	}, []string{"result"})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(vec)
	}
	return &Store{
		Store:   inner,
		size:    int64(size),
		max:     maxBytes,
		shared:  cfg.Shared,
		hits:    vec.WithLabelValues("hit"),
		misses:  vec.WithLabelValues("miss"),
		passing: vec.WithLabelValues("pass"),
		blocks:  map[blockKey]*list.Element{},
		rooms:   map[string]map[int64]*list.Element{},
		lru:     list.New(),
		loading: map[blockKey]*load{},
		known:   map[string]int64{},
	}
}

// Messages implements parley.Store: a page whose seqs lie in full blocks
// comes from memory (loading the blocks it lacks), any other page from the
// inner store.
func (s *Store) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	from, to, ok := span(p)
	if !ok {
		s.passing.Inc()
		return s.Store.Messages(ctx, roomID, p)
	}
	var room *parley.Room // Shared: the room, read before any block
	if s.shared {
		r, err := s.Store.Room(ctx, roomID)
		if err != nil {
			s.passing.Inc()
			return s.Store.Messages(ctx, roomID, p)
		}
		s.fresh(ctx, roomID, r.LastChange)
		room = &r
	}
	first, last := s.blockOf(from), s.blockOf(to)
	hi, loaded, err := s.block(ctx, roomID, last, room)
	if err != nil || hi == nil {
		s.passing.Inc()
		return s.Store.Messages(ctx, roomID, p)
	}
	lo := hi
	if first != last {
		var loadedLo bool
		if lo, loadedLo, err = s.block(ctx, roomID, first, room); err != nil || lo == nil {
			s.passing.Inc()
			return s.Store.Messages(ctx, roomID, p)
		}
		loaded = loaded || loadedLo
	}
	if loaded {
		s.misses.Inc()
	} else {
		s.hits.Inc()
	}
	page := s.cut(lo, hi, first, from, to, first == last)
	if p.Forward() {
		page = slices.Clone(page)
		slices.Reverse(page)
	}
	return page, nil
}

// span returns the seqs a page asks for when they can come from blocks:
// an older (Before > 0) or a catching-up page, whose full extent is known
// without the room's last seq. ok is false for other pages.
func span(p parley.Page) (from, to int64, ok bool) {
	if p.Limit < 1 || p.Limit > parley.MaxPageLimit {
		return 0, 0, false
	}
	limit := int64(p.Limit)
	switch {
	case p.Forward():
		if p.After > math.MaxInt64-limit { // past any seq: the inner store says so
			return 0, 0, false
		}
		return p.After + 1, p.After + limit, true
	case p.Before > 1:
		return max(1, p.Before-limit), p.Before - 1, true
	}
	return 0, 0, false
}

func (s *Store) blockOf(seq int64) int64 { return (seq - 1) / s.size }

// cut returns seqs from..to, newest first, from blocks first (lo) and
// first+1 (hi), or from lo alone when one block holds them: a sub-slice
// of the block when it can, else a copy.
func (s *Store) cut(lo, hi []parley.Message, first, from, to int64, one bool) []parley.Message {
	// In a block of index k, newest first, seq q sits at (k+1)·size − q.
	at := func(k, q int64) int64 { return (k+1)*s.size - q }
	if one {
		end := at(first, from) + 1
		return lo[at(first, to):end:end]
	}
	out := make([]parley.Message, 0, to-from+1)
	out = append(out, hi[at(first+1, to):]...)
	return append(out, lo[:at(first, from)+1]...)
}

// block returns the room's block k, newest first, from memory or loaded
// (loaded true); nil with no error when it is not full (or the room is
// unknown). room, when not nil (Config.Shared), is the room as read
// before: a block loaded now is marked with its LastChange.
func (s *Store) block(ctx context.Context, roomID string, k int64, room *parley.Room) (msgs []parley.Message, loaded bool, err error) {
	key := blockKey{roomID, k}
	end := (k + 1) * s.size // the block's newest seq
	s.mu.Lock()
	if msgs := s.cachedLocked(key); msgs != nil {
		s.mu.Unlock()
		return msgs, false, nil
	}
	known := s.known[roomID]
	s.mu.Unlock()
	if room != nil && room.LastSeq < end {
		return nil, false, nil
	}
	if room == nil && known < end {
		// Is the block full by now? The room's info comes from memory or
		// Redis; a room that is not found goes to the inner store.
		r, err := s.Store.Room(ctx, roomID)
		if err != nil || r.LastSeq < end {
			return nil, false, nil
		}
		s.mu.Lock()
		if len(s.known) >= maxRoomsKnown {
			clear(s.known)
		}
		s.known[roomID] = max(s.known[roomID], r.LastSeq)
		s.mu.Unlock()
	}
	s.mu.Lock()
	if msgs := s.cachedLocked(key); msgs != nil { // loaded while we asked for the room
		s.mu.Unlock()
		return msgs, false, nil
	}
	l, waiting := s.loading[key]
	if !waiting {
		l = &load{done: make(chan struct{})}
		s.loading[key] = l
	}
	changes := s.changes
	s.mu.Unlock()
	if waiting {
		select {
		case <-l.done:
			return l.msgs, true, l.err
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
	defer func() { // also when the inner store panics: no waiter may hang
		s.mu.Lock()
		delete(s.loading, key)
		if l.msgs != nil && s.changes == changes { // else an edit may be newer than what was read
			b := &block{key: key, msgs: l.msgs, bytes: sizeOf(l.msgs)}
			if room != nil {
				b.change = room.LastChange
			}
			s.addLocked(b)
		}
		s.mu.Unlock()
		close(l.done)
	}()
	l.err = errLoadAborted
	l.msgs, l.err = s.read(ctx, roomID, k)
	return l.msgs, true, l.err
}

// cachedLocked returns block key if it is in memory, marking it used.
func (s *Store) cachedLocked(key blockKey) []parley.Message {
	e, ok := s.blocks[key]
	if !ok {
		return nil
	}
	s.lru.MoveToFront(e)
	return e.Value.(*block).msgs
}

// errLoadAborted is what waiters get when a load never finished.
var errLoadAborted = errors.New("history: block load aborted")

// sizeOf estimates the memory of msgs.
func sizeOf(msgs []parley.Message) int {
	n := 0
	for i := range msgs {
		m := &msgs[i]
		n += messageOverhead + len(m.ID) + len(m.RoomID) + len(m.SenderID) + len(m.SenderName) + len(m.Body) + len(m.ClientID)
	}
	return n
}

// read loads block k from the inner store, newest first; nil unless full.
func (s *Store) read(ctx context.Context, roomID string, k int64) ([]parley.Message, error) {
	var msgs []parley.Message
	for after := k * s.size; int64(len(msgs)) < s.size; {
		want := int(min(s.size-int64(len(msgs)), parley.MaxPageLimit))
		page, err := s.Store.Messages(ctx, roomID, parley.Page{After: after, Limit: want})
		if parley.ErrorCode(err) == parley.CodeNotFound {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			if m.Seq != after+1 { // never expected: seqs are contiguous
				return nil, nil
			}
			msgs = append(msgs, m)
			after++
		}
		if len(page) < want || after == (k+1)*s.size {
			break
		}
	}
	if int64(len(msgs)) != s.size {
		return nil, nil
	}
	slices.Reverse(msgs)
	return msgs[:len(msgs):len(msgs)], nil
}

// addLocked keeps a loaded block and evicts the least recently used past
// the bound.
func (s *Store) addLocked(b *block) {
	if _, ok := s.blocks[b.key]; ok {
		return
	}
	e := s.lru.PushFront(b)
	s.blocks[b.key] = e
	byIndex := s.rooms[b.key.room]
	if byIndex == nil {
		byIndex = map[int64]*list.Element{}
		s.rooms[b.key.room] = byIndex
	}
	byIndex[b.key.index] = e
	s.bytes += b.bytes
	for s.bytes > s.max && s.lru.Len() > 1 {
		old := s.lru.Back()
		s.forgetLocked(old.Value.(*block).key, old)
	}
}

// WaitIndexed waits for the inner store's search index, when it trails
// the commit (parley.IndexWaiter).
func (s *Store) WaitIndexed(ctx context.Context) error { return parley.WaitIndexed(ctx, s.Store) }
