package webhook

import (
	"testing"
	"time"

	"parley"
)

// TestChangeKind: a change is named by what its message shows now, as a
// since-change replay names it: a tombstone is deleted, an edited message
// edited (a reaction on it too), else reaction, then thread, then edited.
func TestChangeKind(t *testing.T) {
	now := time.Now()
	reacted := []parley.Reaction{{Emoji: "👍", Count: 1}}
	for _, c := range []struct {
		name string
		m    parley.Message
		want string
	}{
		{"deleted", parley.Message{DeletedAt: &now, EditedAt: &now, Reactions: reacted}, parley.HookMessageDeleted},
		{"edited", parley.Message{EditedAt: &now}, parley.HookMessageEdited},
		{"edited, then a reaction", parley.Message{EditedAt: &now, Reactions: reacted}, parley.HookMessageEdited},
		{"a reaction", parley.Message{Reactions: reacted}, parley.HookReaction},
		{"a reply", parley.Message{Thread: &parley.Thread{Replies: 1}}, parley.HookThread},
		{"a reaction and a reply", parley.Message{Reactions: reacted, Thread: &parley.Thread{Replies: 1}}, parley.HookReaction},
		{"renamed sender", parley.Message{}, parley.HookMessageEdited},
		{"pinned", parley.Message{Change: 4, Reactions: reacted, EditedAt: &now, Pinned: &parley.Pin{Change: 4}}, parley.HookPin},
		{"pinned, then a reaction", parley.Message{Change: 5, Reactions: reacted, Pinned: &parley.Pin{Change: 4}}, parley.HookReaction},
		{"unpinned", parley.Message{Change: 6}, parley.HookMessageEdited},
	} {
		if got := changeKind(&c.m); got != c.want {
			t.Errorf("%s: changeKind = %s, want %s", c.name, got, c.want)
		}
	}
}
