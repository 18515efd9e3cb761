package cache_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"parley"
	"parley/cache"
)

// EditMessage and the other change methods give the fake the semantics of
// the stores (parleytest's Changes cases).
func (f *fakeStore) EditMessage(ctx context.Context, e parley.Edit) (parley.Message, error) {
	return f.change(e.RoomID, e.Seq, func(m *parley.Message) error {
		switch {
		case m.SenderID != e.EditorID:
			return parley.Errorf(parley.CodeForbidden, "not the sender")
		case m.DeletedAt != nil:
			return parley.Errorf(parley.CodeConflict, "deleted")
		}
		m.Body = e.Body
		return nil
	}, parley.EventEdited)
}

func (f *fakeStore) DeleteMessage(ctx context.Context, d parley.Deletion) (parley.Message, bool, error) {
	m, err := f.change(d.RoomID, d.Seq, func(m *parley.Message) error {
		if m.SenderID != d.ActorID && !d.Moderator {
			return parley.Errorf(parley.CodeForbidden, "not the sender")
		}
		m.Body = ""
		return nil
	}, parley.EventDeleted)
	return m, err == nil, err
}

// change applies f to message seq of the room with the next change number.
func (f *fakeStore) change(roomID string, seq int64, fn func(*parley.Message) error, kind parley.EventKind) (parley.Message, error) {
	var out parley.Message
	err := f.write(func(emit func(parley.Event)) error {
		r, ok := f.rooms[roomID]
		msgs := f.messages[roomID]
		if !ok || seq < 1 || seq > int64(len(msgs)) {
			return notFound("message", fmt.Sprint(seq))
		}
		m := msgs[seq-1]
		if err := fn(&m); err != nil {
			return err
		}
		at := f.tickLocked()
		r.LastChange++
		f.rooms[roomID] = r
		m.Change = r.LastChange
		if kind == parley.EventEdited {
			m.EditedAt = &at
		} else {
			m.DeletedAt = &at
		}
		msgs[seq-1] = m
		out = m
		emit(parley.Event{Kind: kind, Room: r, UserID: m.SenderID, Message: m})
		return nil
	})
	return out, err
}

func (f *fakeStore) Changed(ctx context.Context, roomID string, after int64, limit int) ([]parley.Message, error) {
	return nil, parley.Errorf(parley.CodeInvalid, "not in the fake")
}

func (f *fakeStore) SearchRoom(ctx context.Context, roomID string, q parley.Query, before int64, limit int) ([]parley.Message, error) {
	return nil, parley.Errorf(parley.CodeInvalid, "not in the fake")
}

func (f *fakeStore) Search(ctx context.Context, userID string, q parley.Query, cursor string, limit int) ([]parley.SearchHit, string, error) {
	return nil, "", parley.Errorf(parley.CodeInvalid, "not in the fake")
}

// TestChangesInWindow: an edit and a deletion show at once in the newest
// page and the room list served from memory, while the page and last
// message handed out before keep what they were.
func TestChangesInWindow(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			e := be.newEnv(t, cache.Config{})
			u := e.mustUser(t, "u")
			r := e.mustRoom(t, u, "r")
			for i := range 5 {
				e.mustSend(t, r, u, fmt.Sprint("m", i+1))
			}
			before, err := e.c.Messages(ctx, r.ID, parley.Newest(5))
			if err != nil {
				t.Fatalf("Messages() error = %v", err)
			}
			list, _, err := e.c.Rooms(ctx, u.ID, "", 10)
			if err != nil || len(list) != 1 {
				t.Fatalf("Rooms() = %v, %v", list, err)
			}
			reads := e.cnt.total.Load()
			if _, err := e.c.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: 5, EditorID: u.ID, Body: "five"}); err != nil {
				t.Fatalf("EditMessage() error = %v", err)
			}
			if _, _, err := e.c.DeleteMessage(ctx, parley.Deletion{RoomID: r.ID, Seq: 2, ActorID: u.ID}); err != nil {
				t.Fatalf("DeleteMessage() error = %v", err)
			}
			after, err := e.c.Messages(ctx, r.ID, parley.Newest(5))
			if err != nil || len(after) != 5 || after[0].Body != "five" || after[0].Change != 1 || after[3].Body != "" || after[3].DeletedAt == nil {
				t.Errorf("newest page after the changes = %+v, %v; want seq 5 edited and seq 2 a tombstone", after, err)
			}
			now, _, err := e.c.Rooms(ctx, u.ID, "", 10)
			if err != nil || len(now) != 1 || now[0].LastMessage.Body != "five" || now[0].Room.LastChange != 2 {
				t.Errorf("room list after the changes = %+v, %v; want the edited last message, last_change 2", now, err)
			}
			if got := e.cnt.total.Load() - reads; got != 0 {
				t.Errorf("reads after the changes reached the inner store %d times, want 0 (served from memory)", got)
			}
			if before[0].Body != "m5" || before[3].Body != "m2" || list[0].LastMessage.Body != "m5" {
				t.Errorf("results handed out before the changes were changed: %q %q %q", before[0].Body, before[3].Body, list[0].LastMessage.Body)
			}
			want, _ := e.ref.Messages(ctx, r.ID, parley.Newest(5))
			if !reflect.DeepEqual(after, want) {
				t.Errorf("cached page = %+v, inner store's = %+v", after, want)
			}
		})
	}
}

// TestChangeDuringOlderLoad commits an edit of an older message while the
// cache is reading the run below its window: the run it adds must hold the
// edit, not the snapshot's version.
func TestChangeDuringOlderLoad(t *testing.T) {
	e := newEnv(t, cache.Config{RecentMessages: 150})
	u := e.mustUser(t, "u")
	sink := e.fake.sink
	e.fake.sink = nil // the cache hears nothing of the room: it loads it
	r, _, err := e.fake.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: "r", CreatorID: u.ID})
	if err != nil {
		t.Fatalf("CreateRoom() error = %v", err)
	}
	for i := range 200 {
		e.fake.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: fmt.Sprint("m", i+1)})
	}
	e.fake.sink = sink
	if _, err := e.c.Room(ctx, r.ID); err != nil {
		t.Fatalf("Room() error = %v", err)
	}
	if _, err := e.c.Messages(ctx, r.ID, parley.Newest(10)); err != nil { // window: seqs 101..200
		t.Fatalf("Messages() error = %v", err)
	}
	var once sync.Once
	edited := false
	e.fake.afterRead = func(method string) {
		if method == "Messages" {
			once.Do(func() {
				edited = true
				if _, err := e.c.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: 90, EditorID: u.ID, Body: "ninety"}); err != nil {
					t.Errorf("EditMessage() error = %v", err)
				}
			})
		}
	}
	older := parley.Page{Before: 101, After: -1, Limit: 20}
	e.c.Messages(ctx, r.ID, older) // loads 81..100 below the window
	e.fake.afterRead = nil
	if !edited {
		t.Fatalf("the older page did not reach the inner store: the test set-up is wrong")
	}
	reads := e.cnt.total.Load()
	got, err := e.c.Messages(ctx, r.ID, older)
	if err != nil || len(got) != 20 {
		t.Fatalf("Messages(older) = %d, %v", len(got), err)
	}
	if e.cnt.total.Load() != reads {
		t.Errorf("the older page was not served from the window")
	}
	if m := got[100-90]; m.Seq != 90 || m.Body != "ninety" || m.Change != 1 {
		t.Errorf("Messages(older) seq 90 = %+v, want the edit committed during the load", m)
	}
}
