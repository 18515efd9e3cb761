package parley

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Replies and threads (design §3b). A send may reply to an earlier message
// of its room (NewMessage.ReplyTo). Threads are one level, as in Slack and
// Element: a reply to a reply joins the thread of its root, so a reply's
// ReplyTo always names a root, and a root is a message that is no reply.
// The reply carries the root's sender name and an excerpt of its text,
// which the stores keep right when the root is edited (the new text's
// excerpt) or deleted (empty). The root carries its thread's summary
// (Message.Thread), moved in the reply's own transaction: the root takes
// the room's next change number then (an EventThread), so caches,
// changed_after and since-change carry reply counts as they carry edits.
// A reply that is deleted stays in its thread as a tombstone, and counts.

// Thread bounds.
const (
	// MaxExcerpt is the length of a reply's excerpt of its root, in
	// characters (Unicode code points): the root's text cut there.
	MaxExcerpt = 100
	// MaxParticipants is how many repliers a thread's summary names.
	MaxParticipants = 10
)

// ReplyRef is what a reply shows of the message it replies to.
type ReplyRef struct {
	Seq        int64  `json:"seq"`
	SenderName string `json:"sender_name"`
	Excerpt    string `json:"excerpt"`
}

// Thread is a root's summary of its replies: how many, when the last came,
// and who replied (distinct senders in the order of their first reply, at
// most MaxParticipants).
type Thread struct {
	Replies      int       `json:"replies"`
	LastReplyAt  time.Time `json:"last_reply_at"`
	Participants []string  `json:"participants"`
}

// ThreadStore is the part of Store that reads threads.
type ThreadStore interface {
	// Replies returns the replies of root seq (its thread), oldest first,
	// those with seq > after, at most limit (clamped as for Page). Fails
	// with CodeNotFound for an unknown room or seq.
	Replies(ctx context.Context, roomID string, root, after int64, limit int) ([]Message, error)
}

// Excerpt is a reply's excerpt of body: its first MaxExcerpt characters.
// The stores cut it alike in SQL (substr, left).
func Excerpt(body string) string {
	n := 0
	for i := range body {
		if n == MaxExcerpt {
			return body[:i]
		}
		n++
	}
	return body
}

// EncodeThread is how the stores keep a root's summary in one column: ""
// for none.
func EncodeThread(t *Thread) string {
	if t == nil {
		return ""
	}
	b, _ := json.Marshal(t)
	return string(b)
}

// DecodeThread reads back what EncodeThread wrote (or the stores' SQL
// built alike).
func DecodeThread(s string) (*Thread, error) {
	if s == "" {
		return nil, nil
	}
	var t Thread
	if err := json.Unmarshal([]byte(s), &t); err != nil {
		return nil, fmt.Errorf("decode thread: %w", err)
	}
	t.LastReplyAt = t.LastReplyAt.UTC()
	return &t, nil
}
