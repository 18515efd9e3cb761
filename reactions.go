package parley

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Reactions (design §3b): a member puts an emoji on a message, or takes
// it off. Each effective change takes the room's next change number, as an
// edit does, and the message records it (Message.Change), so caches,
// changed_after and since-change carry reactions the way they carry edits.
// The message keeps its reactions' counts (Message.Reactions, in the
// order each emoji first appeared); who reacted is read apart (Reactors).

// Reaction bounds.
const (
	// MaxReactionsPerMessage is how many distinct emojis one message may
	// carry.
	MaxReactionsPerMessage = 20
	// MaxReactionsPerUser is how many distinct emojis one user may put on
	// one message.
	MaxReactionsPerUser = 10
	// MaxEmojiBytes is the longest emoji, in bytes of UTF-8: room for the
	// longest ZWJ sequences (a family, a flag with tags) and short names.
	MaxEmojiBytes = 32
)

// Reaction actions: the action header of a reaction event.
const (
	ReactionAdded   = "added"
	ReactionRemoved = "removed"
)

// Reaction is one emoji's count on a message. Me says whether the viewer
// is among those who put it: the stores and the events leave it false
// (a message is shared by every viewer); the REST reads fill it for their
// caller (see ReactionStore.MyReactions).
type Reaction struct {
	Emoji string `json:"emoji"`
	Count int    `json:"count"`
	Me    bool   `json:"me"`
}

// React asks to add (Add) or remove one user's emoji on a message.
type React struct {
	RoomID string
	Seq    int64
	UserID string
	Emoji  string
	Add    bool
}

// ReactionStore is the part of Store that keeps reactions.
type ReactionStore interface {
	// React adds or removes r.UserID's r.Emoji on message r.Seq and returns
	// the message in its version after it. changed is false when there was
	// nothing to do (adding a reaction that is there, removing one that is
	// not): nothing is stored, no change number is taken, no event is
	// sent. An effective change moves the room's last_change, sets the
	// message's Change, and its commit event is EventReaction (UserID,
	// Emoji, Reason: ReactionAdded or ReactionRemoved). Fails with
	// CodeNotFound for an unknown room or seq, CodeConflict for a deleted
	// message (a tombstone loses its reactions) and for an add past
	// MaxReactionsPerMessage or MaxReactionsPerUser.
	React(ctx context.Context, r React) (msg Message, changed bool, err error)
	// Reactors returns the users who put emoji on message seq, first
	// reaction first, at most limit (clamped as for Page). Fails with
	// CodeNotFound for an unknown room or seq.
	Reactors(ctx context.Context, roomID string, seq int64, emoji string, limit int) ([]User, error)
	// MyReactions returns, of the messages seqs of the room, the emojis
	// userID put on each (a message with none is absent).
	MyReactions(ctx context.Context, roomID, userID string, seqs []int64) (map[int64][]string, error)
}

// WithMine returns msgs with Me set on the reactions mine lists (as
// MyReactions returns it): a copy of msgs and of each changed message's
// reactions, as msgs may be shared; msgs itself when nothing changes.
func WithMine(msgs []Message, mine map[int64][]string) []Message {
	if len(mine) == 0 {
		return msgs
	}
	out := msgs
	copied := false
	for i := range msgs {
		emojis := mine[msgs[i].Seq]
		if len(emojis) == 0 || len(msgs[i].Reactions) == 0 {
			continue
		}
		if !copied {
			out = append([]Message(nil), msgs...)
			copied = true
		}
		rs := append([]Reaction(nil), msgs[i].Reactions...)
		for j := range rs {
			for _, e := range emojis {
				if rs[j].Emoji == e {
					rs[j].Me = true
				}
			}
		}
		out[i].Reactions = rs
	}
	return out
}

// HasReactions reports whether any of msgs carries a reaction: only then
// does a read need the caller's own (MyReactions).
func HasReactions(msgs []Message) bool {
	for i := range msgs {
		if len(msgs[i].Reactions) > 0 {
			return true
		}
	}
	return false
}

// CheckEmoji refuses, with CodeInvalid, what is not an emoji: an emoji is
// either a short name, ":" 1 to 30 of [a-z0-9_+-] ":" (":thumbsup:"),
// or a Unicode emoji sequence of at most MaxEmojiBytes: symbols (category
// So, which holds the pictographs and the regional indicators of flags)
// joined by ZERO WIDTH JOINER, with variation selectors, skin tone
// modifiers, tag characters (subdivision flags) and the keycap mark (the
// keycaps' 0-9, # and * are allowed before it). Nothing else: no letters,
// no spaces, no control characters.
func CheckEmoji(e string) error {
	if e == "" || len(e) > MaxEmojiBytes || !utf8.ValidString(e) {
		return Errorf(CodeInvalid, "emoji must be 1 to %d bytes of UTF-8", MaxEmojiBytes)
	}
	if len(e) >= 3 && e[0] == ':' && e[len(e)-1] == ':' {
		for _, c := range e[1 : len(e)-1] {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '-') {
				return Errorf(CodeInvalid, "a short name is :name: of a-z, 0-9, _, + and -")
			}
		}
		return nil
	}
	symbol, keycap := false, false
	for _, c := range e {
		switch {
		case unicode.Is(unicode.So, c):
			symbol = true
		case c == 0x20E3: // combining enclosing keycap
			keycap = true
		case c == 0x200D, c == 0xFE0F, c == 0xFE0E, c >= 0x1F3FB && c <= 0x1F3FF, c >= 0xE0020 && c <= 0xE007F:
		case c >= '0' && c <= '9', c == '#', c == '*':
		default:
			return Errorf(CodeInvalid, "emoji must be a Unicode emoji or a :short_name:")
		}
	}
	if !symbol && !keycap {
		return Errorf(CodeInvalid, "emoji must be a Unicode emoji or a :short_name:")
	}
	if !keycap && containsAny(e, "0123456789#*") {
		return Errorf(CodeInvalid, "emoji must be a Unicode emoji or a :short_name:")
	}
	return nil
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

// ChangesMessage reports whether events of kind k carry a stored message
// in a new version (Event.Message) that caches put in place of the old:
// edits, deletions, reactions, a root's thread summary and pins.
func (k EventKind) ChangesMessage() bool {
	return k == EventEdited || k == EventDeleted || k == EventReaction || k == EventThread || k == EventPin
}

// storedReaction is one emoji's count as the stores keep it with the
// message: {"e": emoji, "n": count}.
type storedReaction struct {
	E string `json:"e"`
	N int    `json:"n"`
}

// EncodeReactions is how the stores keep a message's reactions in one
// column: "" for none, a JSON array of {"e","n"} otherwise.
func EncodeReactions(rs []Reaction) string {
	if len(rs) == 0 {
		return ""
	}
	out := make([]storedReaction, len(rs))
	for i, r := range rs {
		out[i] = storedReaction{r.Emoji, r.Count}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// DecodeReactions reads back what EncodeReactions wrote.
func DecodeReactions(s string) ([]Reaction, error) {
	if s == "" {
		return nil, nil
	}
	var in []storedReaction
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, fmt.Errorf("decode reactions: %w", err)
	}
	out := make([]Reaction, len(in))
	for i, r := range in {
		out[i] = Reaction{Emoji: r.E, Count: r.N}
	}
	return out, nil
}

// CheckReact refuses, with CodeConflict, an add that would pass a bound:
// rs are the message's reactions, mine how many distinct emojis the user
// has on it already. It is for the stores, inside the change's
// transaction.
func CheckReact(rs []Reaction, emoji string, mine int) error {
	if mine >= MaxReactionsPerUser {
		return Errorf(CodeConflict, "at most %d reactions per user on a message", MaxReactionsPerUser)
	}
	for _, r := range rs {
		if r.Emoji == emoji {
			return nil
		}
	}
	if len(rs) >= MaxReactionsPerMessage {
		return Errorf(CodeConflict, "at most %d distinct reactions on a message", MaxReactionsPerMessage)
	}
	return nil
}
