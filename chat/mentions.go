package chat

import (
	"context"
	"fmt"
	"log/slog"
	"math"
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
// NotifyMentions or NotifyNone), for members only. The room list shows
// it, with the unread mentions, from the store's Rooms: the caches keep
// both with the membership (cache: at once; redis.HotStore, a cluster's,
// reads them with the list from the shared store, so at once on every
// node).
func (s *Service) SetNotifyLevel(ctx context.Context, u parley.User, roomID, level string) error {
	if err := parley.CheckNotifyLevel(level); err != nil {
		return err
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return err
	}
	err := s.store.SetNotifyLevel(ctx, roomID, u.ID, level)
	if parley.ErrorCode(err) == parley.CodeNotFound { // left meanwhile
		return parley.Errorf(parley.CodeForbidden, "not a member of this room")
	}
	return err
}
