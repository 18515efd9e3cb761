package cache_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"parley"
	"parley/cache"
)

// TestLoadOvertakenByEvents commits writes while a load is between its
// snapshot and its install, so that their events reach Apply in between:
// the installed state must include them.
func TestLoadOvertakenByEvents(t *testing.T) {
	type step struct {
		name  string
		read  func(e *env) // the cold read that loads
		write func(e *env) // committed after the load's snapshot
	}
	steps := []step{
		{"memberships/join", func(e *env) { e.c.Memberships(ctx, e.user[1].ID) }, func(e *env) { e.c.Join(ctx, e.room[2].ID, e.user[1].ID) }},
		{"memberships/leave", func(e *env) { e.c.Memberships(ctx, e.user[1].ID) }, func(e *env) { e.c.Leave(ctx, e.room[0].ID, e.user[1].ID) }},
		{"memberships/rejoin", func(e *env) { e.c.Memberships(ctx, e.user[1].ID) }, func(e *env) {
			e.c.Leave(ctx, e.room[0].ID, e.user[1].ID)
			e.c.Join(ctx, e.room[0].ID, e.user[1].ID)
		}},
		{"member/read", func(e *env) { e.c.Member(ctx, e.room[0].ID, e.user[1].ID) }, func(e *env) { e.c.MarkRead(ctx, e.room[0].ID, e.user[1].ID, 3) }},
		{"member/send", func(e *env) { e.c.Member(ctx, e.room[0].ID, e.user[1].ID) }, func(e *env) {
			e.c.Send(ctx, parley.NewMessage{RoomID: e.room[0].ID, SenderID: e.user[1].ID, Body: "x"})
		}},
		{"members/join", func(e *env) { e.c.Members(ctx, e.room[2].ID) }, func(e *env) { e.c.Join(ctx, e.room[2].ID, e.user[1].ID) }},
		{"members/leave", func(e *env) { e.c.Members(ctx, e.room[0].ID) }, func(e *env) { e.c.Leave(ctx, e.room[0].ID, e.user[1].ID) }},
		{"listing/leave", func(e *env) { e.c.RoomMembers(ctx, e.room[0].ID) }, func(e *env) { e.c.Leave(ctx, e.room[0].ID, e.user[1].ID) }},
		{"listing/role", func(e *env) { e.c.RoomMembers(ctx, e.room[0].ID) }, func(e *env) {
			e.c.SetRole(ctx, e.room[0].ID, e.user[0].ID, e.user[1].ID, parley.RoleAdmin)
		}},
		{"listing/read", func(e *env) { e.c.RoomMembers(ctx, e.room[0].ID) }, func(e *env) { e.c.MarkRead(ctx, e.room[0].ID, e.user[1].ID, 3) }},
		{"listing/rejoin", func(e *env) { e.c.RoomMembers(ctx, e.room[0].ID) }, func(e *env) {
			e.c.Leave(ctx, e.room[0].ID, e.user[1].ID)
			e.c.Join(ctx, e.room[0].ID, e.user[1].ID)
		}},
		{"room/send", func(e *env) { e.c.Room(ctx, e.room[0].ID) }, func(e *env) {
			e.c.Send(ctx, parley.NewMessage{RoomID: e.room[0].ID, SenderID: e.user[0].ID, Body: "x"})
		}},
		{"messages/send", func(e *env) { e.c.Messages(ctx, e.room[0].ID, parley.Newest(50)) }, func(e *env) {
			for range 3 {
				e.c.Send(ctx, parley.NewMessage{RoomID: e.room[0].ID, SenderID: e.user[0].ID, Body: "x"})
			}
		}},
		{"rooms/send", func(e *env) { e.c.Rooms(ctx, e.user[1].ID, "", 10) }, func(e *env) {
			e.c.Send(ctx, parley.NewMessage{RoomID: e.room[1].ID, SenderID: e.user[0].ID, Body: "x"})
			e.c.MarkRead(ctx, e.room[0].ID, e.user[1].ID, 100)
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			e := raceEnv(t)
			var once sync.Once
			e.fake.afterRead = func(string) { once.Do(func() { st.write(e) }) }
			st.read(e)
			e.fake.afterRead = nil
			e.check(t)
		})
	}
}

// TestLoadAheadOfEvents runs cold reads while a committed write's events
// have not reached Apply yet, so that the loads install snapshots newer
// than the events that follow: the cache must end right.
func TestLoadAheadOfEvents(t *testing.T) {
	e := raceEnv(t)
	hold, release := make(chan struct{}), make(chan struct{})
	e.fake.beforeSink = func() {
		close(hold)
		<-release
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.c.Send(ctx, parley.NewMessage{RoomID: e.room[0].ID, SenderID: e.user[1].ID, Body: "late"})
	}()
	<-hold
	e.fake.beforeSink = nil // the writer is parked: no other write runs
	for _, u := range e.user {
		e.c.Rooms(ctx, u.ID, "", 10)
		e.c.Member(ctx, e.room[0].ID, u.ID)
	}
	for _, r := range e.room {
		e.c.Room(ctx, r.ID)
		e.c.Members(ctx, r.ID)
		e.c.Messages(ctx, r.ID, parley.Newest(50))
	}
	close(release)
	<-done
	e.check(t)
}

// raceEnv is three users and three rooms with a few messages; rooms 0 and 1
// have everyone, room 2 only user 0.
func raceEnv(t *testing.T) *env {
	e := newEnv(t, cache.Config{})
	for i := range 3 {
		e.mustUser(t, fmt.Sprint("user", i))
	}
	for i := range 3 {
		r := e.mustRoom(t, e.user[0], fmt.Sprint("room", i))
		if i < 2 {
			e.mustJoin(t, r, e.user[1])
			e.mustJoin(t, r, e.user[2])
		}
		for j := range 5 {
			e.mustSend(t, r, e.user[j%2], fmt.Sprint(j))
		}
	}
	return e
}

// TestConcurrent runs writers and readers at once, some of them with a tiny
// cache that evicts all the time. Each writer checks that it reads its own
// writes through the cache; at the end every read must match the inner
// store.
func TestConcurrent(t *testing.T) {
	for _, be := range backends {
		for _, cfg := range []cache.Config{{}, {RecentMessages: 5, MaxRooms: 2, MaxUsers: 2}} {
			t.Run(fmt.Sprintf("%s/rooms=%d", be.name, cfg.MaxRooms), func(t *testing.T) {
				e := be.newEnv(t, cfg)
				e.populate(t, 6, 5)
				var stop atomic.Bool
				var writers, readers sync.WaitGroup
				for w := range 3 {
					own := []parley.User{e.user[w], e.user[w+3]}
					writers.Go(func() { e.writer(t, rand.New(rand.NewPCG(uint64(w), 9)), own, 300) })
				}
				for r := range 2 {
					readers.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(r), 7))
						for !stop.Load() {
							u := e.user[rng.IntN(len(e.user))]
							room := e.room[rng.IntN(len(e.room))]
							e.c.Rooms(ctx, u.ID, "", 1+rng.IntN(5))
							e.c.Messages(ctx, room.ID, parley.Newest(1+rng.IntN(60)))
							e.c.Members(ctx, room.ID)
							e.c.Member(ctx, room.ID, u.ID)
							e.c.Memberships(ctx, u.ID)
							e.c.Room(ctx, room.ID)
						}
					})
				}
				writers.Wait()
				stop.Store(true)
				readers.Wait()
				e.check(t)
			})
		}
	}
}

// writer makes random writes and checks after each that a read through the
// cache sees it. Only this writer changes the memberships of the users it
// owns.
func (e *env) writer(t *testing.T, rng *rand.Rand, own []parley.User, n int) {
	for range n {
		u := own[rng.IntN(len(own))]
		r := e.room[rng.IntN(len(e.room))]
		switch rng.IntN(7) {
		case 0:
			if _, _, err := e.c.Join(ctx, r.ID, u.ID); err != nil {
				t.Errorf("Join: %v", err)
				return
			}
			if _, err := e.c.Member(ctx, r.ID, u.ID); err != nil {
				t.Errorf("Member(%s, %s) right after Join: %v", r.Title, u.Name, err)
			}
			if ids, _ := e.c.Members(ctx, r.ID); !slices.Contains(ids, u.ID) {
				t.Errorf("Members(%s) right after Join lacks %s", r.Title, u.Name)
			}
		case 1:
			if _, err := e.c.Leave(ctx, r.ID, u.ID); err != nil {
				t.Errorf("Leave: %v", err)
				return
			}
			if list, _, _ := e.c.Rooms(ctx, u.ID, "", parley.MaxPageLimit); slices.ContainsFunc(list, func(x parley.RoomEntry) bool { return x.Room.ID == r.ID }) {
				t.Errorf("Rooms(%s) right after Leave lists %s", u.Name, r.Title)
			}
			if _, err := e.c.Member(ctx, r.ID, u.ID); parley.ErrorCode(err) != parley.CodeNotFound {
				t.Errorf("Member(%s, %s) right after Leave: %v, want not_found", r.Title, u.Name, err)
			}
		case 2:
			m, err := e.c.MarkRead(ctx, r.ID, u.ID, 1+rng.Int64N(400))
			if parley.ErrorCode(err) == parley.CodeNotFound {
				continue
			}
			if got, err := e.c.Member(ctx, r.ID, u.ID); err != nil || got.ReadSeq < m.ReadSeq {
				t.Errorf("Member(%s, %s) right after MarkRead to %d = %+v, %v", r.Title, u.Name, m.ReadSeq, got, err)
			}
		default:
			m, _, err := e.c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: "x"})
			if parley.ErrorCode(err) == parley.CodeForbidden {
				continue // not a member now: the store refuses it
			}
			if err != nil {
				t.Errorf("Send: %v", err)
				return
			}
			page, err := e.c.Messages(ctx, r.ID, parley.Page{After: m.Seq - 1, Limit: 1})
			if err != nil || len(page) != 1 || !reflect.DeepEqual(page[0], m) {
				t.Errorf("Messages right after Send of %d = %v, %v", m.Seq, seqs(page), err)
			}
			if got, _ := e.c.Room(ctx, r.ID); got.LastSeq < m.Seq {
				t.Errorf("Room(%s).LastSeq = %d right after Send of %d", r.Title, got.LastSeq, m.Seq)
			}
		}
	}
}
