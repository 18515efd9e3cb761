package chat

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"parley"
	"parley/ratelimit"
)

// Mentions and notification levels (design §3b; the grammar is
// parley.MentionNames). A send or an edit resolves the @names of its
// text, before the store sees it, into the user ids of current members
// (parley.Message.Mentions):
//   - a name that is no user's is plain text;
//   - a name of a registered user who is not a member is refused with
//     CodeInvalid, and nothing is stored ("… is not a member of this
//     room: invite them first");
//   - "@room" is for the room's owner and admins (CodeForbidden for a
//     plain member, so also in a direct room), and each user may use it
//     in each room at most RoomMentionBurst times at once, then once
//     every RoomMentionEvery (CodeRateLimited with the wait);
//   - at most parley.MaxMentions distinct names (CodeInvalid past it).
//
// A text with no "@" costs one scan of its bytes and no store read.
// After the commit, the mentioned members are told (Config.OnMention):
// every member for "@room", never the sender, nobody at level none, and
// after an edit only those the edit newly mentions.

// @room's rate per user per room.
const (
	RoomMentionBurst = 3
	RoomMentionEvery = time.Minute
)

// Limiter is a token bucket per key: *ratelimit.Limiter on one node,
// *ratelimit.Shared over a cluster.
type Limiter interface {
	Allow(key string) (ok bool, retryAfter time.Duration)
}

// NewRoomMentionLimit returns the @room limit of one node.
func NewRoomMentionLimit() *ratelimit.Limiter {
	return ratelimit.New(ratelimit.Config{Rate: 1 / RoomMentionEvery.Seconds(), Burst: RoomMentionBurst})
}

// resolveMentions resolves the mentions of body, a text u (whose
// membership of roomID is me) sends or edits into; hadRoom: an edit of a
// message that mentioned @room already, which spends no @room of the
// limit again.
func (s *Service) resolveMentions(ctx context.Context, u parley.User, me parley.Member, roomID, body string, hadRoom bool) (parley.MentionList, error) {
	names := parley.MentionNames(body)
	if len(names) == 0 {
		return "", nil
	}
	if len(names) > parley.MaxMentions {
		return "", parley.Errorf(parley.CodeInvalid, "a message may mention at most %d distinct names", parley.MaxMentions)
	}
	ids := make([]string, 0, len(names))
	room := false
	for _, name := range names {
		if name == "room" {
			if me.Role != parley.RoleOwner && me.Role != parley.RoleAdmin {
				return "", parley.Errorf(parley.CodeForbidden, "only the room's owner and admins may mention @room; mention members by name")
			}
			ids = append(ids, parley.MentionRoom)
			room = true
			continue
		}
		if !namePattern.MatchString(name) {
			continue
		}
		v, _, err := s.store.UserByName(ctx, name)
		if parley.ErrorCode(err) == parley.CodeNotFound {
			continue // no user: plain text
		}
		if err != nil {
			return "", fmt.Errorf("mention %s: %w", name, err)
		}
		if _, err := s.store.Member(ctx, roomID, v.ID); err != nil {
			if parley.ErrorCode(err) == parley.CodeNotFound {
				return "", parley.Errorf(parley.CodeInvalid, "%s is not a member of this room: invite them first", name)
			}
			return "", err
		}
		ids = append(ids, v.ID)
	}
	if room && !hadRoom {
		if ok, wait := s.roomMentions.Allow(u.ID + ":" + roomID); !ok {
			secs := int64(math.Ceil(wait.Seconds()))
			return "", parley.RetryAfter(wait, parley.Errorf(parley.CodeRateLimited,
				"@room is limited to %d per room every %s: try again in %d s", RoomMentionBurst, RoomMentionEvery, secs))
		}
	}
	return parley.JoinMentions(ids), nil
}

// tellMentioned tells the members m mentions of it, those before (the
// message's mentions before an edit) named already excepted.
func (s *Service) tellMentioned(ctx context.Context, m parley.Message, before parley.MentionList) {
	if s.onMention == nil || m.Mentions == "" || m.Deleted() || before.Room() {
		return
	}
	var users []string
	if m.Mentions.Room() {
		all, err := s.store.Members(ctx, m.RoomID)
		if err != nil {
			slog.Warn("mention: members", "room", m.RoomID, "err", err)
			return
		}
		users = all
	} else {
		for _, id := range m.Mentions.IDs() {
			if !before.Has(id) {
				users = append(users, id)
			}
		}
	}
	out := users[:0:0]
	for _, id := range users {
		if id != m.SenderID {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return
	}
	levels, err := s.store.NotifyLevels(ctx, m.RoomID, out)
	if err != nil {
		slog.Warn("mention: notification levels", "room", m.RoomID, "err", err)
		return
	}
	users = out[:0]
	for _, id := range out {
		if levels[id] != parley.NotifyNone {
			users = append(users, id)
		}
	}
	if len(users) > 0 {
		s.onMention(parley.Event{Kind: parley.EventMention, Room: parley.Room{ID: m.RoomID}, Message: m, Users: users})
	}
}

// SetNotifyLevel sets u's notification level in a room (parley.NotifyAll,
// NotifyMentions or NotifyNone), for members only.
func (s *Service) SetNotifyLevel(ctx context.Context, u parley.User, roomID, level string) error {
	if err := parley.CheckNotifyLevel(level); err != nil {
		return err
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return err
	}
	err := s.store.SetNotifyLevel(ctx, roomID, u.ID, level)
	s.notify.drop(u.ID)
	if parley.ErrorCode(err) == parley.CodeNotFound { // left meanwhile
		return parley.Errorf(parley.CodeForbidden, "not a member of this room")
	}
	return err
}

// withNotify fills the entries' mention counts and levels from the store.
// Rooms at the default (level all, no unread mention) keep Notifications
// "" (parley.RoomEntry); when every room is, es itself is returned, so
// that a memo of the store's slice still knows it.
//
// The store's answer is kept per user (notifyMemo) with a fingerprint of
// the entries it was read for: their rooms' last seq and change and the
// member's unread count, which every message, edit, deletion and read
// moves. While they stand still, so do the counts, and the room list,
// the hottest read, makes no store read for them. A level set on this
// node drops the user's memo at once; one set on another node of a
// cluster shows here within notifyMemoTTL.
func (s *Service) withNotify(ctx context.Context, u parley.User, es []parley.RoomEntry) ([]parley.RoomEntry, error) {
	if len(es) == 0 {
		return es, nil
	}
	fp := fingerprint(es)
	st, ok := s.notify.get(u.ID, fp, s.now())
	if !ok {
		var err error
		if st, err = s.store.NotifyStates(ctx, u.ID); err != nil {
			return nil, err
		}
		s.notify.put(u.ID, fp, st, s.now())
	}
	if len(st) == 0 {
		return es, nil
	}
	out := make([]parley.RoomEntry, len(es)) // es may be shared (a cache's)
	for i, e := range es {
		if n, ok := st[e.Room.ID]; ok {
			e.Notifications, e.Mentions = n.Level, n.Mentions
		}
		out[i] = e
	}
	return out, nil
}

// notifyMemoTTL bounds how long a room list may show a level set on
// another node; notifyMemoMax bounds the users whose answers are kept
// (past it the memo starts again empty).
const (
	notifyMemoTTL = 10 * time.Second
	notifyMemoMax = 100_000
)

// notifyMemo keeps each user's last NotifyStates answer (withNotify).
type notifyMemo struct {
	mu    sync.Mutex // guards the following fields
	users map[string]notifyEntry
}

type notifyEntry struct {
	fp uint64
	at time.Time
	st map[string]parley.RoomNotify // shared, read-only
}

func (m *notifyMemo) get(userID string, fp uint64, now time.Time) (map[string]parley.RoomNotify, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.users[userID]
	if !ok || e.fp != fp || now.Sub(e.at) >= notifyMemoTTL || now.Before(e.at) {
		return nil, false
	}
	return e.st, true
}

func (m *notifyMemo) put(userID string, fp uint64, st map[string]parley.RoomNotify, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.users == nil || len(m.users) >= notifyMemoMax {
		m.users = map[string]notifyEntry{}
	}
	m.users[userID] = notifyEntry{fp: fp, at: now, st: st}
}

func (m *notifyMemo) drop(userID string) {
	m.mu.Lock()
	delete(m.users, userID)
	m.mu.Unlock()
}

// fingerprint hashes what moves a member's mention counts: each entry's
// room (the first 8 bytes of its id: 40 random bits), last seq, last
// change and unread count, a word at a time.
func fingerprint(es []parley.RoomEntry) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		h = (h ^ v) * 1099511628211
		h ^= h >> 29
	}
	for i := range es {
		e := &es[i]
		mix(idWord(e.Room.ID))
		mix(uint64(e.Room.LastSeq))
		mix(uint64(e.Room.LastChange))
		mix(uint64(e.Unread))
	}
	return h
}

// idWord is the first 8 bytes of id as a word (fewer: those there are).
func idWord(id string) uint64 {
	var w uint64
	for i := 0; i < 8 && i < len(id); i++ {
		w |= uint64(id[i]) << (8 * i)
	}
	return w
}
