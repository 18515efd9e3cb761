package rest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"parley"
)

// TestEncodeMatchesEncodingJSON checks the hand-written encoders against
// encoding/json on awkward strings and times.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	strs := []string{
		"", "plain", `quote " backslash \ slash /`, "<script>&amp;</script>",
		"tab\tnewline\nreturn\rbell\a nul\x00 esc\x1b del\x7f", "\u2028\u2029",
		"héllo 世界 🎉", "bad \xff utf8 \xc3", "\b\f",
	}
	times := []time.Time{
		{}, time.Date(2026, 11, 30, 5, 6, 7, 0, time.UTC),
		time.Date(2026, 11, 30, 5, 6, 7, 123456000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 100000000, time.UTC),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return strs[rng.IntN(len(strs))] }
	for i := 0; i < 200; i++ {
		m := parley.Message{
			ID: pick(), RoomID: pick(), Seq: rng.Int64N(1 << 40), SenderID: pick(),
			SenderName: pick(), Body: pick(), ClientID: pick(), SentAt: times[rng.IntN(len(times))],
			Change: rng.Int64N(3),
		}
		if m.Change > 0 { // edited, deleted or both
			at := times[rng.IntN(len(times))]
			if i%2 == 0 {
				m.EditedAt = &at
			}
			if i%3 == 0 {
				m.DeletedAt = &at
			}
		}
		if i%4 == 1 { // reactions, a reply, a thread
			m.Reactions = []parley.Reaction{{Emoji: pick(), Count: rng.IntN(5) + 1, Me: i%8 == 1}, {Emoji: "👍", Count: 1}}
			m.ReplyTo = &parley.ReplyRef{Seq: rng.Int64N(1 << 30), SenderName: pick(), Excerpt: pick()}
			m.Thread = &parley.Thread{Replies: rng.IntN(9) + 1, LastReplyAt: times[rng.IntN(len(times))], Participants: []string{pick(), pick()}}
		}
		var fs []parley.File
		for j := range i % 3 { // some carry files
			fs = append(fs, parley.File{ID: pick(), Name: pick(), Type: pick(), Size: rng.Int64N(1 << 30), Preview: j%2 == 0})
		}
		m.Files = parley.NewFileList(fs)
		if i%5 == 2 { // pinned
			m.Pinned = &parley.Pin{By: pick(), At: times[rng.IntN(len(times))], Change: rng.Int64N(1 << 40)}
		}
		switch i % 4 { // some mention one, several, or the room
		case 1:
			m.Mentions = "u1abcdefghijklmnopqrstuvwx"
		case 2:
			m.Mentions = parley.JoinMentions([]string{"u1abc", parley.MentionRoom, "u2def"})
		}
		msgs := []parley.Message{m, m}
		want, _ := json.Marshal(struct {
			Messages []parley.Message `json:"messages"`
		}{msgs})
		if got := appendMessages(nil, msgs); !bytes.Equal(got, want) {
			t.Fatalf("appendMessages = %s\nwant             %s", got, want)
		}

		var peer *parley.User
		if i%2 == 0 {
			peer = &parley.User{ID: pick(), Name: pick()}
		}
		room := parley.Room{
			ID: pick(), Kind: pick(), Title: pick(), Capacity: rng.IntN(100), MemberCount: rng.IntN(100),
			LastSeq: rng.Int64N(1000), LastChange: rng.Int64N(5), LastActivityAt: times[rng.IntN(len(times))], DirectKey: "x:y",
		}
		var last *parley.Message
		if i%3 != 0 {
			last = &m
		}
		entries := []roomEntryView{{Room: roomView{Room: room, Peer: peer}, LastMessage: last, Unread: rng.Int64N(50),
			Mentions: rng.Int64N(5), Notifications: []string{"all", "mentions", "none"}[i%3]}}
		for _, next := range []string{"", pick()} {
			var cursor *string
			if next != "" {
				cursor = &next
			}
			want, _ := json.Marshal(struct {
				Rooms      []roomEntryView `json:"rooms"`
				NextCursor *string         `json:"next_cursor"`
			}{entries, cursor})
			if got := appendRoomList(nil, entries, next); !bytes.Equal(got, want) {
				t.Fatalf("appendRoomList = %s\nwant             %s", got, want)
			}
		}
	}
	if got, want := string(appendRoomList(nil, nil, "")), `{"rooms":[],"next_cursor":null}`; got != want {
		t.Errorf("empty room list = %s, want %s", got, want)
	}
	if got, want := string(appendMessages(nil, nil)), `{"messages":[]}`; got != want {
		t.Errorf("empty page = %s, want %s", got, want)
	}
}

func BenchmarkEncodeRoomList(b *testing.B) {
	m := parley.Message{ID: parley.NewID(), RoomID: parley.NewID(), Seq: 42, SenderID: parley.NewID(),
		SenderName: "alice", Body: "hello there, how are you doing today?", SentAt: parley.Now()}
	entries := make([]roomEntryView, 50)
	for i := range entries {
		entries[i] = roomEntryView{Room: roomView{Room: parley.Room{ID: parley.NewID(), Kind: "group", Title: "room",
			MemberCount: 3, LastSeq: 42, LastActivityAt: parley.Now()}}, LastMessage: &m, Unread: 3}
	}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendRoomList(buf[:0], entries, "")
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(struct {
				Rooms      []roomEntryView `json:"rooms"`
				NextCursor *string         `json:"next_cursor"`
			}{entries, nil})
		}
	})
}

// FuzzAppendString checks appendString and appendTime against
// encoding/json on any input.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text of some length", "<>&\"\\", "héllo\u2028\xff", "0123456\x01789abcdef"} {
		f.Add(s, int64(1764478000123456789))
	}
	f.Fuzz(func(t *testing.T, s string, ns int64) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
		for _, tm := range []time.Time{time.Unix(0, ns).UTC(), time.Unix(0, ns).UTC().Truncate(time.Microsecond), time.Unix(0, ns).In(time.FixedZone("x", 3600))} {
			want, err := json.Marshal(tm)
			if err != nil {
				continue // outside the years encoding/json accepts
			}
			if got := appendTime(nil, tm); !bytes.Equal(got, want) {
				t.Fatalf("appendTime(%v) = %s, want %s", tm, got, want)
			}
		}
	})
}

func BenchmarkEncodeMessages(b *testing.B) {
	msgs := make([]parley.Message, 50)
	for i := range msgs {
		msgs[i] = parley.Message{ID: parley.NewID(), RoomID: parley.NewID(), Seq: int64(1000 - i), SenderID: parley.NewID(),
			SenderName: "alice", Body: string(bytes.Repeat([]byte("x"), 100)), ClientID: parley.NewID()[:12], SentAt: parley.Now()}
	}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = appendMessages(buf[:0], msgs)
	}
	b.SetBytes(int64(len(buf)))
}
