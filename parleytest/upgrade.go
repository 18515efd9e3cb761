package parleytest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"parley"
)

// The upgrade world: what the stores' TestUpgradeFromEveryVersion put in a
// database of each earlier schema version and read back after Open has
// migrated it to the newest. Each store keeps, in
// testdata/upgrade/NNNN.sql, SQL that writes this world in the schema of
// version NNNN, as that version's program stored it; CheckUpgrade knows
// the world as the Store returns it.
//
// Times are at(n): n seconds and n microseconds after UpgradeT0 (the
// microseconds check that no migration rounds a time). In SQLite that is
// 1767225600000000 + 1000001·n unix µs; in PostgreSQL
// '2026-01-01 00:00:00+00' + n s + n µs.

// UpgradeT0 is the instant the upgrade world's times count from.
var UpgradeT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(n int) time.Time { return UpgradeT0.Add(time.Duration(n) * (time.Second + time.Microsecond)) }

// UpgradeFeatures says which parts of the upgrade world a schema version
// holds. An older version holds less of it, and what it lacks is what the
// migrations make of its absence: no admins (0002 makes each group room's
// longest-standing member its owner, everyone else a member), no bans, no
// edits or tombstones (every message as it was sent, change numbers 0), no
// change keys.
type UpgradeFeatures struct {
	Roles      bool // members' roles and the bans (0002 in both stores)
	Changes    bool // edits, tombstones and change numbers (0003)
	ChangeKeys bool // the idempotency keys of edits and deletions (0004)
}

type upUser struct {
	id, name string
	hash     []byte
	created  int
}

type upToken struct {
	hash      []byte
	user      string
	created   time.Time
	expires   time.Time
	unexpired bool
}

type upMember struct {
	room, user, role string // role as 0002 and later store it
	read             int64
	joined           int
}

// upMessage is a message as sent; edited and deleted (at(n), 0 for never)
// and change are its later history, in versions with Changes.
type upMessage struct {
	room             string
	seq              int64
	id, sender, body string
	client           string
	sent             int
	edited, deleted  int
	change           int64
}

type upKey struct {
	room, user, client string
	seq                int64
	deleted            bool
	change             int64
}

var (
	upgradeUsers = []upUser{
		{"u-alice", "alice", []byte{0xa1, 0x1c, 0xe0}, 1},
		{"u-bob", "bob", []byte{0xb0, 0xb0}, 2},
		{"u-carol", "carol", []byte{0xca, 0x20, 0x1}, 3},
		{"u-dave", "dave", []byte{0xda, 0x7e}, 4}, // in no room: banned from r-small
	}
	upgradeTokens = []upToken{
		{[]byte{0x70, 0xc1}, "u-alice", at(10), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{[]byte{0x70, 0xc2}, "u-bob", at(11), at(50), false},
		{[]byte{0x70, 0xc3}, "u-bob", at(12), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), true},
	}
	// r-general has every kind of message; r-quiet none.
	upgradeRooms = []parley.Room{
		{ID: "r-general", Kind: parley.KindGroup, Title: "General", Capacity: 0, MemberCount: 3,
			LastSeq: 5, LastChange: 2, LastActivityAt: at(204), CreatedAt: at(100)},
		{ID: "r-small", Kind: parley.KindGroup, Title: "Small", Capacity: 3, MemberCount: 2,
			LastSeq: 2, LastActivityAt: at(211), CreatedAt: at(130)},
		{ID: "r-dm", Kind: parley.KindDirect, Title: "", Capacity: 2, MemberCount: 2,
			LastSeq: 2, LastActivityAt: at(221), CreatedAt: at(160), DirectKey: "u-alice:u-bob"},
		{ID: "r-quiet", Kind: parley.KindGroup, Title: "Quiet", Capacity: 10, MemberCount: 1,
			LastSeq: 0, LastActivityAt: at(170), CreatedAt: at(170)},
	}
	upgradeMembers = []upMember{
		{"r-general", "u-alice", parley.RoleOwner, 5, 100},
		{"r-general", "u-bob", parley.RoleAdmin, 3, 110},
		{"r-general", "u-carol", parley.RoleMember, 0, 120},
		{"r-small", "u-bob", parley.RoleOwner, 2, 130},
		{"r-small", "u-carol", parley.RoleMember, 1, 140},
		{"r-dm", "u-alice", parley.RoleMember, 2, 160},
		{"r-dm", "u-bob", parley.RoleMember, 1, 160},
		{"r-quiet", "u-carol", parley.RoleOwner, 0, 170},
	}
	upgradeMessages = []upMessage{
		{"r-general", 1, "m-general-1", "u-alice", "hello world", "c-1", 200, 0, 0, 0},
		{"r-general", 2, "m-general-2", "u-bob", "plain words, nothing else", "", 201, 0, 0, 0},
		{"r-general", 3, "m-general-3", "u-carol", "crème brûlée für alle", "c-3", 202, 0, 0, 0},
		{"r-general", 4, "m-general-4", "u-alice", "edited text", "c-4", 203, 300, 0, 1},
		{"r-general", 5, "m-general-5", "u-bob", "deleted soon", "c-5", 204, 0, 301, 2},
		{"r-small", 1, "m-small-1", "u-bob", "hello small room", "s-1", 210, 0, 0, 0},
		{"r-small", 2, "m-small-2", "u-carol", "a reply", "", 211, 0, 0, 0},
		{"r-dm", 1, "m-dm-1", "u-alice", "hello bob", "c-1", 220, 0, 0, 0},
		{"r-dm", 2, "m-dm-2", "u-bob", "hi alice", "d-2", 221, 0, 0, 0},
	}
	upgradeBans = []parley.Ban{
		{RoomID: "r-small", UserID: "u-dave", Name: "dave", ActorID: "u-bob", BannedAt: at(150)},
	}
	upgradeKeys = []upKey{
		{"r-general", "u-alice", "e-1", 4, false, 1},
		{"r-general", "u-bob", "k-1", 5, true, 2},
	}
)

func upUserName(id string) string {
	for _, u := range upgradeUsers {
		if u.id == id {
			return u.name
		}
	}
	return ""
}

// room returns the room as a database of f holds it.
func (f UpgradeFeatures) room(id string) parley.Room {
	for _, r := range upgradeRooms {
		if r.ID == id {
			if !f.Changes {
				r.LastChange = 0
			}
			return r
		}
	}
	panic("no room " + id)
}

// members returns the members of the room, by user id.
func (f UpgradeFeatures) members(room string) []parley.RoomMember {
	var ms []parley.RoomMember
	for _, m := range upgradeMembers {
		if m.room != room {
			continue
		}
		role := m.role
		if !f.Roles && role == parley.RoleAdmin {
			role = parley.RoleMember
		}
		ms = append(ms, parley.RoomMember{Member: parley.Member{RoomID: m.room, UserID: m.user, Role: role,
			ReadSeq: m.read, JoinedAt: at(m.joined)}, Name: upUserName(m.user)})
	}
	return ms
}

// messages returns the room's messages in seq order.
func (f UpgradeFeatures) messages(room string) []parley.Message {
	var ms []parley.Message
	for _, u := range upgradeMessages {
		if u.room != room {
			continue
		}
		m := parley.Message{ID: u.id, RoomID: u.room, Seq: u.seq, SenderID: u.sender, SenderName: upUserName(u.sender),
			Body: u.body, ClientID: u.client, SentAt: at(u.sent)}
		if f.Changes {
			if u.edited != 0 {
				t := at(u.edited)
				m.EditedAt = &t
			}
			if u.deleted != 0 {
				t := at(u.deleted)
				m.DeletedAt, m.Body = &t, ""
			}
			m.Change = u.change
		}
		ms = append(ms, m)
	}
	return ms
}

func (f UpgradeFeatures) message(room string, seq int64) parley.Message {
	return f.messages(room)[seq-1]
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func fmtOptTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

// fmtMessage shows every field of m, so that two equal strings are two
// equal messages.
func fmtMessage(m parley.Message) string {
	return fmt.Sprintf("%s/%d{id %s, from %s %q, body %q, client %q, sent %s, edited %s, deleted %s, change %d}",
		m.RoomID, m.Seq, m.ID, m.SenderID, m.SenderName, m.Body, m.ClientID, fmtTime(m.SentAt),
		fmtOptTime(m.EditedAt), fmtOptTime(m.DeletedAt), m.Change)
}

func fmtMessages(ms []parley.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString("\n\t" + fmtMessage(m))
	}
	return b.String()
}

func fmtRoom(r parley.Room) string {
	return fmt.Sprintf("%s{%s %q, capacity %d, members %d, last seq %d, last change %d, active %s, created %s, direct %q, retention %d}",
		r.ID, r.Kind, r.Title, r.Capacity, r.MemberCount, r.LastSeq, r.LastChange,
		fmtTime(r.LastActivityAt), fmtTime(r.CreatedAt), r.DirectKey, r.RetentionSeconds)
}

func fmtMember(m parley.RoomMember) string {
	return fmt.Sprintf("%s in %s{%q, %s, read %d, joined %s}", m.UserID, m.RoomID, m.Name, m.Role, m.ReadSeq, fmtTime(m.JoinedAt))
}

func fmtBan(b parley.Ban) string {
	return fmt.Sprintf("%s from %s{%q, by %s at %s}", b.UserID, b.RoomID, b.Name, b.ActorID, fmtTime(b.BannedAt))
}

// fmtAll formats each of xs with fn, one a line.
func fmtAll[T any](xs []T, fn func(T) string) string {
	var b strings.Builder
	for _, x := range xs {
		b.WriteString("\n\t" + fn(x))
	}
	return b.String()
}

// CheckUpgrade checks that s, opened on a database of a schema version
// with features f into which the store's testdata/upgrade fixture wrote
// the upgrade world, returns every row of that world intact through
// parley.Store: accounts and tokens, rooms and room lists, members with
// their roles and read positions, bans, every message with its id, seq,
// sender, client id, edit and tombstone, the changes, search, and the
// idempotency keys of sends and changes. Last it sends one message, which
// must take the next seq.
func CheckUpgrade(t *testing.T, s parley.Store, f UpgradeFeatures) {
	t.Helper()
	ctx := context.Background()

	for _, u := range upgradeUsers {
		got, hash, err := s.UserByName(ctx, u.name)
		if err != nil || got.ID != u.id || got.Name != u.name || !got.CreatedAt.Equal(at(u.created)) || !bytes.Equal(hash, u.hash) {
			t.Errorf("UserByName(%s) = %+v, %x, %v; want %s created %s, hash %x", u.name, got, hash, err, u.id, fmtTime(at(u.created)), u.hash)
		}
		if got, err := s.User(ctx, u.id); err != nil || got.Name != u.name {
			t.Errorf("User(%s) = %+v, %v; want %s", u.id, got, err, u.name)
		}
	}
	for _, tok := range upgradeTokens {
		u, got, err := s.TokenUser(ctx, tok.hash, time.Now())
		switch {
		case !tok.unexpired && parley.ErrorCode(err) != parley.CodeUnauthorized:
			t.Errorf("TokenUser(%x) of an expired token = %s, %v; want %s", tok.hash, u.ID, err, parley.CodeUnauthorized)
		case tok.unexpired && (err != nil || u.ID != tok.user || got.UserID != tok.user ||
			!got.CreatedAt.Equal(tok.created) || !got.ExpiresAt.Equal(tok.expires)):
			t.Errorf("TokenUser(%x) = %s, %+v, %v; want %s, created %s, expires %s", tok.hash, u.ID, got, err, tok.user, fmtTime(tok.created), fmtTime(tok.expires))
		}
	}

	for _, r := range upgradeRooms {
		want := f.room(r.ID)
		if got, err := s.Room(ctx, r.ID); err != nil || fmtRoom(got) != fmtRoom(want) {
			t.Errorf("Room(%s) = %s, %v; want %s", r.ID, fmtRoom(got), err, fmtRoom(want))
		}
		checkUpgradedMembers(t, s, f, r.ID)
		checkUpgradedHistory(t, s, f, r.ID)
		var wantBans []parley.Ban
		for _, b := range upgradeBans {
			if f.Roles && b.RoomID == r.ID {
				wantBans = append(wantBans, b)
			}
		}
		if got, err := s.Bans(ctx, r.ID); err != nil || fmtAll(got, fmtBan) != fmtAll(wantBans, fmtBan) {
			t.Errorf("Bans(%s) = %s, %v; want %s", r.ID, fmtAll(got, fmtBan), err, fmtAll(wantBans, fmtBan))
		}
	}
	for _, u := range upgradeUsers {
		checkUpgradedRoomList(t, s, f, u.id)
	}
	checkUpgradedSearch(t, s, f)
	checkUpgradedKeys(t, s, f)

	// The counters go on: a new message takes the next seq, and is found.
	want := f.room("r-general")
	m, created, err := s.Send(ctx, parley.NewMessage{RoomID: "r-general", SenderID: "u-carol", SenderName: "carol",
		Body: "after the upgrade", ClientID: "new-1"})
	if err != nil || !created || m.Seq != want.LastSeq+1 || m.ID == "" {
		t.Fatalf("Send after the upgrade = %s created %v, %v; want seq %d", fmtMessage(m), created, err, want.LastSeq+1)
	}
	for _, id := range []string{"m-general-1", "m-general-2", "m-general-3", "m-general-4", "m-general-5"} {
		if m.ID == id {
			t.Errorf("Send after the upgrade took the id %s of an older message", id)
		}
	}
	if got, err := s.Room(ctx, "r-general"); err != nil || got.LastSeq != m.Seq || got.LastChange != want.LastChange {
		t.Errorf("Room(r-general) after a send = %s, %v; want last seq %d, last change %d", fmtRoom(got), err, m.Seq, want.LastChange)
	}
	if got := searchRoomSeqs(t, s, "r-general", "upgrade"); !slices.Equal(got, []int64{m.Seq}) {
		t.Errorf("SearchRoom(r-general, upgrade) = %v, want [%d]", got, m.Seq)
	}
}

func checkUpgradedMembers(t *testing.T, s parley.Store, f UpgradeFeatures, room string) {
	t.Helper()
	ctx := context.Background()
	want := f.members(room)
	got, err := s.RoomMembers(ctx, room)
	slices.SortFunc(got, func(a, b parley.RoomMember) int { return strings.Compare(a.UserID, b.UserID) })
	slices.SortFunc(want, func(a, b parley.RoomMember) int { return strings.Compare(a.UserID, b.UserID) })
	if err != nil || fmtAll(got, fmtMember) != fmtAll(want, fmtMember) {
		t.Errorf("RoomMembers(%s) = %s, %v; want %s", room, fmtAll(got, fmtMember), err, fmtAll(want, fmtMember))
	}
	for _, w := range want {
		m, err := s.Member(ctx, room, w.UserID)
		if err != nil || fmtMember(parley.RoomMember{Member: m, Name: w.Name}) != fmtMember(w) {
			t.Errorf("Member(%s, %s) = %+v, %v; want %s", room, w.UserID, m, err, fmtMember(w))
		}
	}
}

func checkUpgradedHistory(t *testing.T, s parley.Store, f UpgradeFeatures, room string) {
	t.Helper()
	ctx := context.Background()
	want := f.messages(room)
	got, err := s.Messages(ctx, room, parley.Page{After: 0, Limit: parley.MaxPageLimit})
	if err != nil || fmtMessages(got) != fmtMessages(want) {
		t.Errorf("Messages(%s, from the start) = %s, %v; want %s", room, fmtMessages(got), err, fmtMessages(want))
	}
	newest := slices.Clone(want)
	slices.Reverse(newest)
	newest = newest[:min(2, len(newest))]
	got, err = s.Messages(ctx, room, parley.Newest(2))
	if err != nil || fmtMessages(got) != fmtMessages(newest) {
		t.Errorf("Messages(%s, newest 2) = %s, %v; want %s", room, fmtMessages(got), err, fmtMessages(newest))
	}
	var changed []parley.Message
	for _, m := range want {
		if m.Change > 0 {
			changed = append(changed, m)
		}
	}
	slices.SortFunc(changed, func(a, b parley.Message) int { return int(a.Change - b.Change) })
	got, err = s.Changed(ctx, room, 0, parley.MaxPageLimit)
	if err != nil || fmtMessages(got) != fmtMessages(changed) {
		t.Errorf("Changed(%s, 0) = %s, %v; want %s", room, fmtMessages(got), err, fmtMessages(changed))
	}
}

// checkUpgradedRoomList checks the user's room list: newest activity
// first, each with its last message and unread count.
func checkUpgradedRoomList(t *testing.T, s parley.Store, f UpgradeFeatures, user string) {
	t.Helper()
	var want []string
	rooms := slices.Clone(upgradeRooms)
	slices.SortFunc(rooms, func(a, b parley.Room) int { return b.LastActivityAt.Compare(a.LastActivityAt) })
	for _, r := range rooms {
		for _, m := range upgradeMembers {
			if m.room == r.ID && m.user == user {
				r := f.room(r.ID)
				last := "none"
				if r.LastSeq > 0 {
					last = fmtMessage(f.message(r.ID, r.LastSeq))
				}
				want = append(want, fmt.Sprintf("%s, last %s, unread %d", fmtRoom(r), last, parley.Unread(r, m.read)))
			}
		}
	}
	entries, next, err := s.Rooms(context.Background(), user, "", parley.MaxPageLimit)
	var got []string
	for _, e := range entries {
		last := "none"
		if e.LastMessage != nil {
			last = fmtMessage(*e.LastMessage)
		}
		got = append(got, fmt.Sprintf("%s, last %s, unread %d", fmtRoom(e.Room), last, e.Unread))
	}
	if err != nil || next != "" || !slices.Equal(got, want) {
		t.Errorf("Rooms(%s) = %q, next %q, %v; want %q", user, got, next, err, want)
	}
}

func searchRoomSeqs(t *testing.T, s parley.Store, room, words string) []int64 {
	t.Helper()
	WaitIndexed(t, s)
	ms, err := s.SearchRoom(context.Background(), room, MustQuery(t, words), 0, parley.MaxPageLimit)
	if err != nil {
		t.Errorf("SearchRoom(%s, %q) error = %v", room, words, err)
	}
	var seqs []int64
	for _, m := range ms {
		seqs = append(seqs, m.Seq)
	}
	return seqs
}

// checkUpgradedSearch searches the old messages: each word finds the
// messages whose current text holds it, in full; a tombstone's old words
// find nothing.
func checkUpgradedSearch(t *testing.T, s parley.Store, f UpgradeFeatures) {
	t.Helper()
	ctx := context.Background()
	deleted := []int64{5}
	if f.Changes {
		deleted = nil
	}
	for _, tt := range []struct {
		room, words string
		want        []int64
	}{
		{"r-general", "hello", []int64{1}},
		{"r-general", "Brûlée", []int64{3}},
		{"r-general", "edited text", []int64{4}},
		{"r-general", "soon", deleted},
		{"r-general", "words", []int64{2}},
		{"r-small", "hello", []int64{1}},
		{"r-dm", "alice", []int64{2}},
		{"r-quiet", "hello", nil},
	} {
		WaitIndexed(t, s)
		ms, err := s.SearchRoom(ctx, tt.room, MustQuery(t, tt.words), 0, parley.MaxPageLimit)
		var want []parley.Message
		for _, seq := range tt.want {
			want = append(want, f.message(tt.room, seq))
		}
		if err != nil || fmtMessages(ms) != fmtMessages(want) {
			t.Errorf("SearchRoom(%s, %q) = %s, %v; want %s", tt.room, tt.words, fmtMessages(ms), err, fmtMessages(want))
		}
	}
	for _, tt := range []struct {
		user, words string
		want        []string // room/seq, newest first
	}{
		{"u-alice", "hello", []string{"r-dm/1", "r-general/1"}},
		{"u-carol", "hello", []string{"r-small/1", "r-general/1"}},
		{"u-dave", "hello", nil},
	} {
		WaitIndexed(t, s)
		hits, next, err := s.Search(ctx, tt.user, MustQuery(t, tt.words), "", parley.MaxPageLimit)
		var got []string
		for _, h := range hits {
			got = append(got, fmt.Sprintf("%s/%d", h.Room.ID, h.Message.Seq))
			if want := fmtMessage(f.message(h.Room.ID, h.Message.Seq)); fmtMessage(h.Message) != want {
				t.Errorf("Search(%s, %q) hit %s, want %s", tt.user, tt.words, fmtMessage(h.Message), want)
			}
		}
		if err != nil || next != "" || !slices.Equal(got, tt.want) {
			t.Errorf("Search(%s, %q) = %v, next %q, %v; want %v", tt.user, tt.words, got, next, err, tt.want)
		}
	}
}

// checkUpgradedKeys repeats every keyed send, and in versions with change
// keys every keyed change: each returns what it stored then, and applies
// nothing.
func checkUpgradedKeys(t *testing.T, s parley.Store, f UpgradeFeatures) {
	t.Helper()
	ctx := context.Background()
	for _, u := range upgradeMessages {
		if u.client == "" {
			continue
		}
		want := f.message(u.room, u.seq)
		m, created, err := s.Send(ctx, parley.NewMessage{RoomID: u.room, SenderID: u.sender, SenderName: upUserName(u.sender),
			Body: "again", ClientID: u.client})
		if err != nil || created || fmtMessage(m) != fmtMessage(want) {
			t.Errorf("Send(%s, %s, client %s) again = %s created %v, %v; want the stored %s",
				u.room, u.sender, u.client, fmtMessage(m), created, err, fmtMessage(want))
		}
	}
	if f.ChangeKeys {
		for _, k := range upgradeKeys {
			want := f.message(k.room, k.seq)
			var m parley.Message
			var err error
			if k.deleted {
				m, _, err = s.DeleteMessage(ctx, parley.Deletion{RoomID: k.room, Seq: k.seq, ActorID: k.user, ClientID: k.client})
			} else {
				m, err = s.EditMessage(ctx, parley.Edit{RoomID: k.room, Seq: k.seq, EditorID: k.user, Body: want.Body, ClientID: k.client})
			}
			if err != nil || m.Change != k.change || fmtMessage(m) != fmtMessage(want) {
				t.Errorf("repeated change %s of %s/%d = %s, %v; want the stored change %d: %s",
					k.client, k.room, k.seq, fmtMessage(m), err, k.change, fmtMessage(want))
			}
		}
	}
	for _, r := range upgradeRooms {
		want := f.room(r.ID)
		if got, err := s.Room(ctx, r.ID); err != nil || got.LastSeq != want.LastSeq || got.LastChange != want.LastChange {
			t.Errorf("Room(%s) after the repeats = %s, %v; want last seq %d, last change %d: nothing new",
				r.ID, fmtRoom(got), err, want.LastSeq, want.LastChange)
		}
	}
}
