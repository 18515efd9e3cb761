package cache

import (
	"context"

	"parley"
)

// Edits and deletions change committed messages, so a cached copy of one
// must follow: EventEdited and EventDeleted carry the message in its new
// version, and Apply puts it in the room's window (applyChange) and the
// room's info (its last_change), which also makes the room lists that show
// it rebuild their first page (the room's ver moves). A window is never
// written in place: the change copies it into a new array, so the pages
// and last messages handed out before keep what they were. A load racing
// with a change replays it from the backlog (loadNewest through
// window.apply, loadOlder through replayChanges). The change number orders
// the versions of a message: an older version never replaces a newer one.
//
// Changed is not cached: it goes to the inner store. The searches are
// served from memory (search.go).

// EditMessage passes through to the inner store; its event updates the
// cache.
func (s *Store) EditMessage(ctx context.Context, e parley.Edit) (parley.Message, error) {
	return s.inner.EditMessage(ctx, e)
}

// DeleteMessage passes through to the inner store; its event updates the
// cache.
func (s *Store) DeleteMessage(ctx context.Context, d parley.Deletion) (parley.Message, bool, error) {
	return s.inner.DeleteMessage(ctx, d)
}

// Changed passes through to the inner store.
func (s *Store) Changed(ctx context.Context, roomID string, after int64, limit int) ([]parley.Message, error) {
	return s.inner.Changed(ctx, roomID, after, limit)
}

// isChange reports whether ev changed a stored message.
func isChange(ev *parley.Event) bool {
	return ev.Kind.ChangesMessage()
}

// applyChange puts the new version of a message the window holds in a
// copy of the window, unless the window has that version or a newer one.
// An edit or a deletion of a thread's root rewrites the excerpt of the
// root's replies the window holds (replies.go at the root), unless the
// window holds a newer version of the root.
func (w *window) applyChange(ev *parley.Event, max int) {
	m := &ev.Message
	if !w.ok {
		return
	}
	held := m.Seq >= w.lo() && m.Seq <= w.hi
	if held && w.at(m.Seq).Change > m.Change {
		return
	}
	if held && w.at(m.Seq).Change < m.Change {
		w.regrow(nil, max)
		*w.at(m.Seq) = *m
	}
	if m.Thread != nil && (ev.Kind == parley.EventEdited || ev.Kind == parley.EventDeleted) {
		if ms, ok := withExcerpt(w.msgs(), m); ok {
			w.buf, w.start = ms, 0
		}
	}
}

// withExcerpt returns a copy of msgs with the excerpt of root's replies
// rewritten from root's text, and true, when one of them shows another;
// msgs itself and false otherwise (msgs may be shared).
func withExcerpt(msgs []parley.Message, root *parley.Message) ([]parley.Message, bool) {
	ex := parley.Excerpt(root.Body)
	var out []parley.Message
	for i := range msgs {
		r := msgs[i].ReplyTo
		if r == nil || r.Seq != root.Seq || r.Excerpt == ex {
			continue
		}
		if out == nil {
			out = append([]parley.Message(nil), msgs...)
		}
		out[i].ReplyTo = &parley.ReplyRef{Seq: r.Seq, SenderName: r.SenderName, Excerpt: ex}
	}
	if out == nil {
		return msgs, false
	}
	return out, true
}

// replayChanges returns older (a newest-first run loaded from the inner
// store) with the changes among events applied: a copy when one applies.
func replayChanges(older []parley.Message, events []parley.Event) []parley.Message {
	copied := false
	for i := range events {
		ev := &events[i]
		if !isChange(ev) || len(older) == 0 {
			continue
		}
		if ev.Message.Thread != nil && (ev.Kind == parley.EventEdited || ev.Kind == parley.EventDeleted) {
			if ms, ok := withExcerpt(older, &ev.Message); ok {
				older, copied = ms, true
			}
		}
		k := older[0].Seq - ev.Message.Seq // newest first
		if k < 0 || k >= int64(len(older)) || older[k].Seq != ev.Message.Seq || older[k].Change >= ev.Message.Change {
			continue
		}
		if !copied {
			older = append([]parley.Message(nil), older...)
			copied = true
		}
		older[k] = ev.Message
	}
	return older
}

// React passes through to the inner store; its event (EventReaction, the
// message's new version) updates the cache as an edit's does.
func (s *Store) React(ctx context.Context, r parley.React) (parley.Message, bool, error) {
	return s.inner.React(ctx, r)
}

// Reactors passes through to the inner store.
func (s *Store) Reactors(ctx context.Context, roomID string, seq int64, emoji string, limit int) ([]parley.User, error) {
	return s.inner.Reactors(ctx, roomID, seq, emoji, limit)
}

// MyReactions passes through to the inner store.
func (s *Store) MyReactions(ctx context.Context, roomID, userID string, seqs []int64) (map[int64][]string, error) {
	return s.inner.MyReactions(ctx, roomID, userID, seqs)
}

// Replies passes through to the inner store: a thread is read where it is
// kept.
func (s *Store) Replies(ctx context.Context, roomID string, root, after int64, limit int) ([]parley.Message, error) {
	return s.inner.Replies(ctx, roomID, root, after, limit)
}

// Pin passes through to the inner store; its event (EventPin, the
// message's new version) updates the cache as an edit's does.
func (s *Store) Pin(ctx context.Context, p parley.PinMessage) (parley.Message, bool, error) {
	return s.inner.Pin(ctx, p)
}

// Pins passes through to the inner store: the pin list is read where it
// is kept.
func (s *Store) Pins(ctx context.Context, roomID string, before int64, limit int) ([]parley.Message, error) {
	return s.inner.Pins(ctx, roomID, before, limit)
}
