package bulk_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"parley"
	"parley/bulk"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/sqlite"
)

var ctx = context.Background()

// exportedAt is every test export's header time, so that two exports of
// the same data are the same bytes.
var exportedAt = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// MustSQLite opens a SQLite store in a new directory.
func MustSQLite(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "parley.db")
	s, err := sqlite.Open(ctx, sqlite.Config{Path: path, Sync: sqlite.SyncOff})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// MustExportSQLite exports the database at path (opt.Room, opt.WithSecrets).
func MustExportSQLite(t testing.TB, path string, opt bulk.Options) []byte {
	t.Helper()
	snap, err := sqlite.OpenSnapshot(ctx, path)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Close()
	var buf bytes.Buffer
	opt.Source, opt.Now = "sqlite", func() time.Time { return exportedAt }
	if _, err := bulk.Export(ctx, snap, &buf, opt); err != nil {
		t.Fatalf("export: %v", err)
	}
	return buf.Bytes()
}

// MustImport imports file into sink.
func MustImport(t testing.TB, sink bulk.Sink, file []byte, opt bulk.ImportOptions) bulk.Result {
	t.Helper()
	res, err := bulk.Import(ctx, sink, bytes.NewReader(file), opt)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return res
}

// fill puts a little of everything in s: accounts, a group room with an
// admin, a ban, edits, a tombstone, keyed changes and read positions, a
// direct room, and a second group room. It returns the first room's id.
func fill(t testing.TB, s parley.Store) string {
	t.Helper()
	var users []parley.User
	for _, name := range []string{"alice", "bob", "carol", "dave"} {
		u, err := s.CreateUser(ctx, parley.NewUser{Name: name, PasswordHash: []byte("hash-of-" + name)})
		if err != nil {
			t.Fatalf("create user: %v", err)
		}
		users = append(users, u)
	}
	a, b, c, d := users[0], users[1], users[2], users[3]
	if err := s.CreateToken(ctx, parley.Token{Hash: []byte("token-a"), UserID: a.ID, CreatedAt: parley.Now(), ExpiresAt: parley.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("token: %v", err)
	}
	room, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: "General", Capacity: 10, CreatorID: a.ID})
	if err != nil {
		t.Fatalf("room: %v", err)
	}
	for _, u := range []parley.User{b, c, d} {
		if _, _, err := s.Join(ctx, room.ID, u.ID); err != nil {
			t.Fatalf("join: %v", err)
		}
	}
	if _, err := s.SetRole(ctx, room.ID, a.ID, b.ID, parley.RoleAdmin); err != nil {
		t.Fatalf("role: %v", err)
	}
	for i, u := range []parley.User{a, b, c, a, b, c, d} {
		m := parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name,
			Body: "hello number " + string(rune('a'+i)), ClientID: "c-" + string(rune('a'+i))}
		if i == 3 { // message 4 mentions bob and the whole room
			m.Body += ", @bob and @room"
			m.Mentions = parley.JoinMentions([]string{b.ID, parley.MentionRoom})
		}
		if _, _, err := s.Send(ctx, m); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	if _, err := s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: 1, EditorID: a.ID, Body: "hello, edited", ClientID: "e-1"}); err != nil {
		t.Fatalf("edit: %v", err)
	}
	if _, _, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: 2, ActorID: b.ID, ClientID: "d-1"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: c.ID, SenderName: c.Name, Body: "a reply", ReplyTo: 1}); err != nil {
		t.Fatalf("reply: %v", err)
	}
	for _, x := range []parley.React{{Seq: 1, UserID: b.ID, Emoji: "👍"}, {Seq: 1, UserID: c.ID, Emoji: "👍"}, {Seq: 3, UserID: c.ID, Emoji: ":tada:"}} {
		x.RoomID, x.Add = room.ID, true
		if _, _, err := s.React(ctx, x); err != nil {
			t.Fatalf("react: %v", err)
		}
	}
	if _, _, err := s.Pin(ctx, parley.PinMessage{RoomID: room.ID, Seq: 3, UserID: a.ID, Add: true}); err != nil {
		t.Fatalf("pin: %v", err)
	}
	// Notification levels: bob hears of mentions only, carol of nothing.
	for u, level := range map[string]string{b.ID: parley.NotifyMentions, c.ID: parley.NotifyNone} {
		if err := s.SetNotifyLevel(ctx, room.ID, u, level); err != nil {
			t.Fatalf("level: %v", err)
		}
	}
	if _, err := s.RemoveMember(ctx, room.ID, a.ID, d.ID, true); err != nil {
		t.Fatalf("ban: %v", err)
	}
	if _, err := s.MarkRead(ctx, room.ID, c.ID, 5); err != nil {
		t.Fatalf("read: %v", err)
	}
	direct, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: c.ID})
	if err != nil {
		t.Fatalf("direct room: %v", err)
	}
	if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: direct.ID, SenderID: c.ID, SenderName: c.Name, Body: "psst"}); err != nil {
		t.Fatalf("send: %v", err)
	}
	keys, ok := s.(interface {
		CreateAPIKey(context.Context, parley.APIKey) (parley.APIKey, error)
		RevokeAPIKey(context.Context, string, time.Time) (parley.APIKey, error)
	})
	if !ok {
		t.Fatalf("%T stores no API keys", s)
	}
	for _, k := range []parley.APIKey{
		{ID: "key1", Name: "deploys", UserID: a.ID, Hash: []byte("hash-1"), Scopes: []string{parley.ScopePost}, RoomID: room.ID},
		{ID: "key2", Name: "old", UserID: b.ID, Hash: []byte("hash-2"), Scopes: []string{parley.ScopePost, parley.ScopeHistory}},
	} {
		if _, err := keys.CreateAPIKey(ctx, k); err != nil {
			t.Fatalf("API key: %v", err)
		}
	}
	if _, err := keys.RevokeAPIKey(ctx, "old", parley.Now()); err != nil {
		t.Fatalf("revoke API key: %v", err)
	}
	other, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: "Other", CreatorID: c.ID})
	if err != nil {
		t.Fatalf("room: %v", err)
	}
	if _, err := s.UpdateRoom(ctx, other.ID, c.ID, parley.RoomUpdate{RetentionSeconds: ptr(int64(3600))}); err != nil {
		t.Fatalf("retention: %v", err)
	}
	if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: other.ID, SenderID: c.ID, SenderName: c.Name, Body: "elsewhere"}); err != nil {
		t.Fatalf("send: %v", err)
	}
	// Files in the other room: one a message carries, one unattached.
	fs, ok := s.(interface {
		CreateFile(context.Context, parley.StoredFile, int64) error
		ClaimFiles(context.Context, string, string, string, []string) ([]parley.StoredFile, error)
		AttachFiles(context.Context, string, int64) error
	})
	if !ok {
		t.Fatalf("%T stores no files", s)
	}
	sum := sha256.Sum256([]byte("png"))
	attached := parley.StoredFile{File: parley.File{ID: "file1", Name: "a.png", Type: "image/png", Size: 3, Preview: true},
		RoomID: other.ID, Uploader: c.ID, SHA256: sum[:]}
	loose := parley.StoredFile{File: parley.File{ID: "file2", Name: "b.txt", Type: "text/plain; charset=utf-8", Size: 3},
		RoomID: other.ID, Uploader: c.ID, SHA256: sum[:]}
	for _, f := range []parley.StoredFile{attached, loose} {
		if err := fs.CreateFile(ctx, f, 1<<20); err != nil {
			t.Fatalf("file: %v", err)
		}
	}
	if _, err := fs.ClaimFiles(ctx, other.ID, c.ID, "r:1", []string{"file1"}); err != nil {
		t.Fatalf("claim: %v", err)
	}
	m, _, err := s.Send(ctx, parley.NewMessage{RoomID: other.ID, SenderID: c.ID, SenderName: c.Name, Body: "a picture",
		Files: parley.NewFileList([]parley.File{attached.File})})
	if err != nil {
		t.Fatalf("send with a file: %v", err)
	}
	if err := fs.AttachFiles(ctx, "r:1", m.Seq); err != nil {
		t.Fatalf("attach: %v", err)
	}
	return room.ID
}

func ptr[T any](v T) *T { return &v }

// lines returns the file's lines but its header.
func lines(file []byte) []string {
	l := strings.Split(strings.TrimSpace(string(file)), "\n")
	return l[1:]
}

func TestRoundTripSQLite(t *testing.T) {
	src, srcPath := MustSQLite(t)
	room := fill(t, src)
	for _, secrets := range []bool{false, true} {
		file := MustExportSQLite(t, srcPath, bulk.Options{WithSecrets: secrets})
		dst, dstPath := MustSQLite(t)
		res := MustImport(t, dst, file, bulk.ImportOptions{BatchSize: 7})
		if res.Written != res.File {
			t.Errorf("secrets %v: import wrote %+v of a file of %+v, want all", secrets, res.Written, res.File)
		}
		if again := MustExportSQLite(t, dstPath, bulk.Options{WithSecrets: secrets}); !bytes.Equal(again, file) {
			t.Errorf("secrets %v: export of the import differs:\n%s\nwant\n%s", secrets, again, file)
		}
		// Search works on what was imported (once the store's indexer has
		// indexed it), and skips the tombstone.
		if err := parley.WaitIndexed(ctx, dst); err != nil {
			t.Fatal(err)
		}
		q, _ := parley.ParseQuery("hello")
		if hits, err := dst.SearchRoom(ctx, room, q, 0, 50); err != nil || len(hits) != 6 {
			t.Errorf("secrets %v: search of the imported room = %d hits, %v; want 6", secrets, len(hits), err)
		}
		if got, want := strings.Count(string(file), `"type":"api_key"`), map[bool]int{true: 2}[secrets]; got != want {
			t.Errorf("secrets %v: %d API keys in the file, want %d", secrets, got, want)
		}
		if got := strings.Count(string(file), `"type":"reaction"`); got != 3 || !strings.Contains(string(file), `"reactions":[{"emoji":"👍","count":2,"me":false}]`) {
			t.Errorf("secrets %v: %d reaction records in the file, want 3, and message 1's counts", secrets, got)
		}
		if got := strings.Count(string(file), `"pinned":{"by":"`); got != 1 {
			t.Errorf("secrets %v: %d pinned messages in the file, want 1", secrets, got)
		}
		if pins, err := dst.Pins(ctx, room, 0, 50); err != nil || len(pins) != 1 || pins[0].Seq != 3 || pins[0].Pinned == nil {
			t.Errorf("secrets %v: pins of the imported room = %+v, %v; want message 3", secrets, pins, err)
		}
		if got := strings.Count(string(file), `"type":"file"`); got != 2 || !strings.Contains(string(file), `"files":[{"id":"file1","name":"a.png"`) {
			t.Errorf("secrets %v: %d file records in the file, want 2, and the message's files", secrets, got)
		}
		if got := strings.Contains(string(file), `"password_hash"`); got != secrets {
			t.Errorf("secrets %v: file holds password hashes: %v", secrets, got)
		}
		checkMentions(t, dst, room, file)
	}
}

// checkMentions checks that file carries fill's mentions and levels, and
// that s, which imported it, holds them: message 4 mentions bob and the
// room; bob is at level mentions, carol at none, the others at all
// (absent from the file).
func checkMentions(t *testing.T, s parley.Store, room string, file []byte) {
	t.Helper()
	ids := map[string]string{}
	for _, name := range []string{"alice", "bob", "carol"} {
		u, _, err := s.UserByName(ctx, name)
		if err != nil {
			t.Fatalf("user %s: %v", name, err)
		}
		ids[name] = u.ID
	}
	if want := `"mentions":["` + ids["bob"] + `","@room"]`; strings.Count(string(file), `"mentions":`) != 1 || !strings.Contains(string(file), want) {
		t.Errorf("the file's mentions: want one message with %s", want)
	}
	if got := strings.Count(string(file), `"notifications":`); got != 2 ||
		!strings.Contains(string(file), `"notifications":"mentions"`) || !strings.Contains(string(file), `"notifications":"none"`) {
		t.Errorf("the file holds %d levels, want bob's mentions and carol's none", got)
	}
	page, err := s.Messages(ctx, room, parley.Page{After: 3, Limit: 1})
	if err != nil || len(page) != 1 || page[0].Mentions != parley.JoinMentions([]string{ids["bob"], parley.MentionRoom}) {
		t.Errorf("imported message 4 = %+v, %v; want it to mention bob and @room", page, err)
	}
	levels, err := s.NotifyLevels(ctx, room, []string{ids["alice"], ids["bob"], ids["carol"]})
	if want := map[string]string{ids["bob"]: parley.NotifyMentions, ids["carol"]: parley.NotifyNone}; err != nil || !maps.Equal(levels, want) {
		t.Errorf("imported levels = %v, %v; want %v", levels, err, want)
	}
}

// MustPostgres opens a PostgreSQL store in a schema of its own, or skips
// the test without PARLEY_TEST_POSTGRES.
func MustPostgres(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	url := pgtest.Schema(t)
	s, err := postgres.Open(ctx, postgres.Config{URL: url, LivenessTimeout: -1})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, url
}

// MustExportPostgres exports the database at url.
func MustExportPostgres(t testing.TB, url string, opt bulk.Options) []byte {
	t.Helper()
	snap, err := postgres.OpenSnapshot(ctx, url)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Close()
	var buf bytes.Buffer
	opt.Source, opt.Now = "postgres", func() time.Time { return exportedAt }
	if _, err := bulk.Export(ctx, snap, &buf, opt); err != nil {
		t.Fatalf("export: %v", err)
	}
	return buf.Bytes()
}

// TestRoundTripPostgres: SQLite → file → PostgreSQL → file → SQLite gives
// the same file (but for the header's source), with secrets and without.
func TestRoundTripPostgres(t *testing.T) {
	src, srcPath := MustSQLite(t)
	room := fill(t, src)
	for _, secrets := range []bool{false, true} {
		opt := bulk.Options{WithSecrets: secrets}
		file := MustExportSQLite(t, srcPath, opt)
		pg, url := MustPostgres(t)
		MustImport(t, pg, file, bulk.ImportOptions{BatchSize: 5})
		fromPG := MustExportPostgres(t, url, opt)
		if got, want := strings.Join(lines(fromPG), "\n"), strings.Join(lines(file), "\n"); got != want {
			t.Errorf("secrets %v: PostgreSQL's export differs:\n%s\nwant\n%s", secrets, got, want)
		}
		back, backPath := MustSQLite(t)
		MustImport(t, back, fromPG, bulk.ImportOptions{})
		if again := MustExportSQLite(t, backPath, opt); !bytes.Equal(again, file) {
			t.Errorf("secrets %v: SQLite → PostgreSQL → SQLite differs:\n%s\nwant\n%s", secrets, again, file)
		}
		// Search works on what was imported (once the store's indexer has
		// indexed it), and skips the tombstone.
		if err := parley.WaitIndexed(ctx, pg); err != nil {
			t.Fatal(err)
		}
		q, _ := parley.ParseQuery("hello")
		hits, err := pg.SearchRoom(ctx, room, q, 0, 50)
		if err != nil || len(hits) != 6 {
			t.Errorf("secrets %v: search of the imported room = %d hits, %v; want 6", secrets, len(hits), err)
		}
		checkMentions(t, pg, room, fromPG)
	}
}

// sinks returns a new empty store of each kind, the PostgreSQL one when
// PARLEY_TEST_POSTGRES is set, with its export.
func sinks(t *testing.T) map[string]func(t *testing.T) (bulk.Sink, func(bulk.Options) []byte) {
	return map[string]func(t *testing.T) (bulk.Sink, func(bulk.Options) []byte){
		"sqlite": func(t *testing.T) (bulk.Sink, func(bulk.Options) []byte) {
			s, path := MustSQLite(t)
			return s, func(o bulk.Options) []byte { return MustExportSQLite(t, path, o) }
		},
		"postgres": func(t *testing.T) (bulk.Sink, func(bulk.Options) []byte) {
			s, url := MustPostgres(t)
			return s, func(o bulk.Options) []byte { return MustExportPostgres(t, url, o) }
		},
	}
}

// same reports whether two exports hold the same records.
func same(a, b []byte) bool { return strings.Join(lines(a), "\n") == strings.Join(lines(b), "\n") }

// TestImportTwice: the second import of a file writes nothing.
func TestImportTwice(t *testing.T) {
	src, srcPath := MustSQLite(t)
	fill(t, src)
	file := MustExportSQLite(t, srcPath, bulk.Options{WithSecrets: true})
	for name, open := range sinks(t) {
		t.Run(name, func(t *testing.T) {
			sink, export := open(t)
			MustImport(t, sink, file, bulk.ImportOptions{})
			res := MustImport(t, sink, file, bulk.ImportOptions{BatchSize: 3})
			if res.Written != (bulk.Counts{}) {
				t.Errorf("second import wrote %+v, want nothing", res.Written)
			}
			if got := export(bulk.Options{WithSecrets: true}); !same(got, file) {
				t.Errorf("after two imports:\n%s\nwant\n%s", got, file)
			}
		})
	}
}

// TestImportResumed: an import stopped after some batches, run again,
// ends with the whole file written once.
func TestImportResumed(t *testing.T) {
	src, srcPath := MustSQLite(t)
	fill(t, src)
	file := MustExportSQLite(t, srcPath, bulk.Options{})
	stop := errors.New("stopped")
	for name, open := range sinks(t) {
		t.Run(name, func(t *testing.T) {
			sink, export := open(t)
			batches := 0
			_, err := bulk.Import(ctx, sink, bytes.NewReader(file), bulk.ImportOptions{BatchSize: 4,
				AfterBatch: func(context.Context, *bulk.Batch) error {
					if batches++; batches == 3 {
						return stop
					}
					return nil
				}})
			if !errors.Is(err, stop) {
				t.Fatalf("first import: %v, want it stopped", err)
			}
			if got := export(bulk.Options{}); same(got, file) {
				t.Fatalf("the stopped import wrote the whole file")
			}
			res := MustImport(t, sink, file, bulk.ImportOptions{BatchSize: 4})
			if res.Written.Records() != res.File.Records()-12 {
				t.Errorf("resumed import wrote %d records, want the %d after the first 3 batches", res.Written.Records(), res.File.Records()-12)
			}
			if got := export(bulk.Options{}); !same(got, file) {
				t.Errorf("after the resumed import:\n%s\nwant\n%s", got, file)
			}
		})
	}
}

// TestExportRoom: a room's export holds that room and the accounts it
// names, and imports alone.
func TestExportRoom(t *testing.T) {
	src, srcPath := MustSQLite(t)
	room := fill(t, src)
	file := MustExportSQLite(t, srcPath, bulk.Options{Room: room})
	rd, err := bulk.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := rd.Next()
		if err != nil {
			break
		}
		if r.Room != nil && r.Room.ID != room {
			t.Errorf("room %s in the export of room %s", r.Room.ID, room)
		}
	}
	if c := rd.Counts(); c.Rooms != 1 || c.Users != 4 || c.Messages != 8 || c.Members != 3 || c.Bans != 1 || c.ChangeKeys != 2 || c.Tokens != 0 {
		t.Errorf("the room's export holds %+v", c)
	}
	dst, dstPath := MustSQLite(t)
	MustImport(t, dst, file, bulk.ImportOptions{})
	if got := MustExportSQLite(t, dstPath, bulk.Options{Room: room}); !bytes.Equal(got, file) {
		t.Errorf("the imported room exports as\n%s\nwant\n%s", got, file)
	}
	page, err := dst.Messages(ctx, room, parley.Newest(50))
	if err != nil || len(page) != 8 || page[0].Seq != 8 || !page[6].Deleted() || page[0].ReplyTo == nil || page[7].Thread == nil {
		t.Errorf("history of the imported room: %d messages, %v", len(page), err)
	}
	if _, err := sqlite.OpenSnapshot(ctx, dstPath); err != nil {
		t.Fatal(err)
	}
}

// TestImportConflict: a record that contradicts the target stops the
// import with a conflict naming it, and nothing of its batch is written.
func TestImportConflict(t *testing.T) {
	src, srcPath := MustSQLite(t)
	room := fill(t, src)
	file := string(MustExportSQLite(t, srcPath, bulk.Options{}))
	firstMessage := regexp.MustCompile(`"id":"([^"]+)","room_id":"` + room + `","seq":3,`)
	for _, tc := range []struct {
		name string
		// prepare readies the target: a store that holds the file,
		// or an empty one when nil; it returns the file to import.
		prepare func(t *testing.T, s parley.Store, sink bulk.Sink) string
		want    string
	}{
		{"user name", func(t *testing.T, s parley.Store, _ bulk.Sink) string {
			if _, err := s.CreateUser(ctx, parley.NewUser{Name: "carol", PasswordHash: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			return file
		}, `user name "carol" is taken`},
		{"another room under the id", func(t *testing.T, _ parley.Store, sink bulk.Sink) string {
			MustImport(t, sink, []byte(file), bulk.ImportOptions{})
			return regexp.MustCompile(`("id":"`+room+`".*"created_at":")2`).ReplaceAllString(file, "${1}1")
		}, "room " + room + " exists in the target as another room"},
		{"another message at a seq", func(t *testing.T, _ parley.Store, sink bulk.Sink) string {
			MustImport(t, sink, []byte(file), bulk.ImportOptions{})
			id := firstMessage.FindStringSubmatch(file)[1]
			return strings.Replace(file, `"id":"`+id+`"`, `"id":"someoneelse"`, 1)
		}, "message 3: that seq is message"},
	} {
		for name, open := range sinks(t) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				sink, export := open(t)
				f := tc.prepare(t, sink.(parley.Store), sink)
				before := export(bulk.Options{})
				_, err := bulk.Import(ctx, sink, strings.NewReader(f), bulk.ImportOptions{})
				if parley.ErrorCode(err) != parley.CodeConflict || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("import = %v, want a conflict saying %q", err, tc.want)
				}
				if after := export(bulk.Options{}); !bytes.Equal(after, before) {
					t.Errorf("the refused batch wrote:\n%s\nwant\n%s", after, before)
				}
			})
		}
	}
}

// pinned matches a pinned message's pin in an export: by, at, change.
var pinned = regexp.MustCompile(`"pinned":\{"by":"([^"]*)","at":"([^"]*)","change":(\d+)\}`)

// TestImportBadFile: a foreign, newer, garbled or truncated file, or one
// whose records could not have been made (a pin no pin could have
// taken), is refused before anything is written.
func TestImportBadFile(t *testing.T) {
	src, srcPath := MustSQLite(t)
	fill(t, src)
	file := string(MustExportSQLite(t, srcPath, bulk.Options{}))
	ls := strings.Split(strings.TrimSpace(file), "\n")
	cut := strings.Join(ls[:len(ls)-1], "\n") + "\n"
	for _, tc := range []struct {
		name, file string
		want       error
	}{
		{"empty", "", bulk.ErrNotExport},
		{"foreign", "id,name\n1,alice\n", bulk.ErrNotExport},
		{"another JSON", `{"type":"account","version":1,"user":{"id":"x","name":"alice"}}` + "\n", bulk.ErrNotExport},
		{"newer", strings.Replace(file, `"version":2`, `"version":3`, 1), bulk.ErrNewer},
		{"truncated", cut, bulk.ErrInvalid},
		{"half a line", file[:len(file)-20], bulk.ErrInvalid},
		{"garbled", strings.Replace(file, `"type":"message"`, `"type":"massage"`, 1), bulk.ErrInvalid},
		{"seq out of order", strings.Replace(file, `"seq":3`, `"seq":1`, 1), bulk.ErrInvalid},
		{"counts", strings.Replace(file, `"messages":11`, `"messages":10`, 1), bulk.ErrInvalid},
		{"a file id that is not one", strings.Replace(file, `"id":"file2"`, `"id":"../file2"`, 1), bulk.ErrInvalid},
		{"a file of another room", strings.Replace(file, `"type":"file","file":{"id":"file1","room_id":"`, `"type":"file","file":{"id":"file1","room_id":"x`, 1), bulk.ErrInvalid},
		{"after the end", file + ls[1] + "\n", bulk.ErrInvalid},
		{"a pin above the room's last change", pinned.ReplaceAllString(file, `"pinned":{"by":"$1","at":"$2","change":999999}`), bulk.ErrInvalid},
		{"a pin of change 0", pinned.ReplaceAllString(file, `"pinned":{"by":"$1","at":"$2","change":0}`), bulk.ErrInvalid},
		{"a pin by nobody", pinned.ReplaceAllString(file, `"pinned":{"by":"","at":"$2","change":$3}`), bulk.ErrInvalid},
		{"an unknown level", strings.Replace(file, `"notifications":"none"`, `"notifications":"loud"`, 1), bulk.ErrInvalid},
		{"a level not a string", strings.Replace(file, `"notifications":"none"`, `"notifications":0`, 1), bulk.ErrInvalid},
		{"mentions twice", strings.Replace(file, `"@room"]`, `"@room","@room"]`, 1), bulk.ErrInvalid},
		{"an empty mention", strings.Replace(file, `"mentions":["`, `"mentions":["","`, 1), bulk.ErrInvalid},
		{"mentions not a list", strings.Replace(file, `"mentions":[`, `"mentions":"bob","x":[`, 1), bulk.ErrInvalid},
		{"a tombstone's mentions", strings.Replace(file, `"body":"","client_id":"c-b"`, `"body":"","mentions":["@room"],"client_id":"c-b"`, 1), bulk.ErrInvalid},
	} {
		if tc.file == file {
			t.Fatalf("%s: the file is unchanged (no pinned message in it?)", tc.name)
		}
		t.Run(tc.name, func(t *testing.T) {
			dst, dstPath := MustSQLite(t)
			before := MustExportSQLite(t, dstPath, bulk.Options{})
			_, err := bulk.Import(ctx, dst, strings.NewReader(tc.file), bulk.ImportOptions{})
			if !errors.Is(err, tc.want) {
				t.Errorf("import = %v, want %v", err, tc.want)
			}
			if after := MustExportSQLite(t, dstPath, bulk.Options{}); !bytes.Equal(after, before) {
				t.Errorf("the refused file wrote:\n%s", after)
			}
		})
	}
}

// TestImportDropsStrayMentions: the mentions of users who are not members
// of the message's room in the file (dave, banned; an id no account has)
// are left out, and said; the others are imported.
func TestImportDropsStrayMentions(t *testing.T) {
	src, srcPath := MustSQLite(t)
	room := fill(t, src)
	file := string(MustExportSQLite(t, srcPath, bulk.Options{}))
	bob, _, err := src.UserByName(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	dave, _, err := src.UserByName(ctx, "dave")
	if err != nil {
		t.Fatal(err)
	}
	stray := strings.Replace(file, `"mentions":["`+bob.ID+`"`, `"mentions":["`+dave.ID+`","`+bob.ID+`","nobody0000"`, 1)
	if stray == file {
		t.Fatal("message 4's mentions are not in the file")
	}
	for name, open := range sinks(t) {
		t.Run(name, func(t *testing.T) {
			dst, export := open(t)
			res, err := bulk.Import(ctx, dst, strings.NewReader(stray), bulk.ImportOptions{BatchSize: 3})
			if err != nil || res.DroppedMentions != 2 {
				t.Fatalf("import = %d mentions dropped, %v; want 2", res.DroppedMentions, err)
			}
			if got := export(bulk.Options{}); !same(got, []byte(file)) {
				t.Errorf("the import exports as\n%s\nwant\n%s", got, file)
			}
			st := dst.(parley.Store)
			page, err := st.Messages(ctx, room, parley.Page{After: 3, Limit: 1})
			if err != nil || len(page) != 1 || page[0].Mentions != parley.JoinMentions([]string{bob.ID, parley.MentionRoom}) {
				t.Errorf("imported message 4 = %+v, %v; want it to mention bob and @room", page, err)
			}
		})
	}
}

// TestExportWhileSending: an export beside a store taking sends is one
// snapshot: each room's last_seq covers exactly its messages in the file
// (a message committed after the room was read would be above it, and
// the file's check refuses that), with no hole.
func TestExportWhileSending(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (parley.Store, func() []byte){
		"sqlite": func(t *testing.T) (parley.Store, func() []byte) {
			s, path := MustSQLite(t)
			return s, func() []byte { return MustExportSQLite(t, path, bulk.Options{}) }
		},
		"postgres": func(t *testing.T) (parley.Store, func() []byte) {
			s, url := MustPostgres(t)
			return s, func() []byte { return MustExportPostgres(t, url, bulk.Options{}) }
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, export := open(t)
			u, err := s.CreateUser(ctx, parley.NewUser{Name: "sender", PasswordHash: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			var rooms []parley.Room
			for i := range 3 {
				r, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: fmt.Sprint("room ", i), CreatorID: u.ID})
				if err != nil {
					t.Fatal(err)
				}
				rooms = append(rooms, r)
			}
			stop, sent := make(chan struct{}), make(chan int64, 1)
			go func() {
				var n int64
				defer func() { sent <- n }()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: rooms[i%3].ID, SenderID: u.ID, SenderName: u.Name, Body: "busy"}); err != nil {
						t.Errorf("send: %v", err)
						return
					}
					n++
				}
			}()
			var files [][]byte
			for range 5 {
				files = append(files, export())
			}
			close(stop)
			total := <-sent
			for i, file := range files {
				rd, err := bulk.NewReader(bytes.NewReader(file))
				if err != nil {
					t.Fatal(err)
				}
				var last, got int64
				for {
					r, err := rd.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("export %d while sending: %v", i, err)
					}
					switch {
					case r.Room != nil:
						if got != last {
							t.Errorf("export %d: a room of last_seq %d with %d messages", i, last, got)
						}
						last, got = r.Room.LastSeq, 0
					case r.Message != nil:
						got++
					}
				}
				if got != last {
					t.Errorf("export %d: a room of last_seq %d with %d messages", i, last, got)
				}
			}
			t.Logf("5 exports while %d messages were sent", total)
		})
	}
}

// exported is every table and column of the SQLite schema and whether an
// export carries it: a table or a column a migration adds fails
// TestEveryColumn until it is exported or said not to be.
var exported = map[string]map[string]bool{
	"users":      {"id": true, "name": true, "password_hash": true, "created_at": true},
	"tokens":     {"hash": true, "user_id": true, "created_at": true, "expires_at": true},
	"api_keys":   {"id": true, "name": true, "user_id": true, "hash": true, "scopes": true, "room_id": true, "created_at": true, "revoked_at": true},
	"name_holds": {"name": true, "until": true},
	"rooms": {"id": true, "kind": true, "title": true, "capacity": true, "member_count": true, "last_seq": true,
		"last_activity_at": true, "created_at": true, "direct_key": true, "last_change": true, "retention_seconds": true,
		"num":        false,  // the full-text index's number of the room: each store's own
		"last_event": false}, // the counter of room_events, not carried: an imported room's events start again at 1
	"members": {"room_id": true, "user_id": true, "read_seq": true, "joined_at": true, "role": true,
		"notify": true}, // the member's "notifications", absent at the default, all

	"bans": {"room_id": true, "user_id": true, "actor_id": true, "banned_at": true},
	"messages": {"room_id": true, "seq": true, "id": true, "sender_id": true, "sender_name": true, "body": true,
		"client_id": true, "sent_at": true, "edited_at": true, "deleted_at": true, "change": true, "reactions": true,
		"reply_seq": true, "reply_sender": true, "reply_excerpt": true, "thread": true,
		"pinned_by": true, "pinned_at": true, "pin_change": true, // a pin travels with its message (parley.Message.Pinned)
		"files":    true,
		"mentions": true, // the message's, as the API shows them; those of non-members dropped by an import (Result.DroppedMentions)
		// Where the last change fell among the sends, for the webhooks'
		// order: not carried, as their events are not; an imported
		// change goes by time (docs/webhooks.md).
		"change_seq": false},
	"message_reactions": {"room_id": true, "seq": true, "emoji": true, "user_id": true, "created_at": true},
	// The files' rows; their bytes, outside the database, by flag
	// (parley export --files-dir, docs/export-format.md).
	"files": {"id": true, "room_id": true, "uploader": true, "name": true, "type": true, "size": true,
		"sha256": true, "preview": true, "created_at": true, "seq": true, "claim": true},
	"change_keys":       {"room_id": true, "user_id": true, "client_id": true, "seq": true, "deleted": true, "change": true},
	"schema_migrations": nil, // the target's own
	// The search indexer's position: each store's own; an import's
	// messages are indexed by the target's indexer.
	"search_position": {"room_id": false, "seq": false},
	// Outgoing webhooks are the server's configuration, not its users'
	// data, and hold their signing secrets: an import does not add
	// them (docs/webhooks.md, "Export, import and port").
	"webhooks":        nil,
	"webhook_cursors": nil,
	// The member and room events exist for the webhooks, which are not
	// carried: an imported room has none, and its counter starts at 0.
	"room_events": nil,
}

// TestEveryColumn: the export carries every table and column of the
// schema, but those exported lists as not carried.
func TestEveryColumn(t *testing.T) {
	_, path := MustSQLite(t)
	var driver string
	for _, d := range sql.Drivers() {
		if d == "sqlite3" || d == "sqlite" {
			driver = d
		}
	}
	db, err := sql.Open(driver, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT t.name, c.name FROM sqlite_master t JOIN pragma_table_info(t.name) c
		WHERE t.type = 'table' AND t.name NOT LIKE 'messages_fts%' AND t.name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		cols, ok := exported[table]
		if _, known := cols[column]; !ok || (cols != nil && !known) {
			t.Errorf("%s.%s is not in the export: carry it (bulk, the stores' Snapshot and Import, docs/export-format.md) or list it in exported as not carried", table, column)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestImportPinsBound: a room of the file with more pinned messages than
// parley.MaxPinsPerRoom, which no store makes, is refused before anything
// is written; one with exactly that many is imported.
func TestImportPinsBound(t *testing.T) {
	src, srcPath := MustSQLite(t)
	u, err := src.CreateUser(ctx, parley.NewUser{Name: "alice", PasswordHash: []byte("h")})
	if err != nil {
		t.Fatal(err)
	}
	room, _, err := src.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: "pins", Capacity: 10, CreatorID: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= parley.MaxPinsPerRoom; i++ {
		if _, _, err := src.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := int64(1); seq <= parley.MaxPinsPerRoom; seq++ {
		if _, _, err := src.Pin(ctx, parley.PinMessage{RoomID: room.ID, Seq: seq, UserID: u.ID, Add: true}); err != nil {
			t.Fatal(err)
		}
	}
	file := string(MustExportSQLite(t, srcPath, bulk.Options{}))
	dst, _ := MustSQLite(t)
	if _, err := bulk.Import(ctx, dst, strings.NewReader(file), bulk.ImportOptions{}); err != nil {
		t.Fatalf("import of %d pins: %v", parley.MaxPinsPerRoom, err)
	}
	// The last message, unpinned, pinned in the file too.
	last := fmt.Sprintf(`"seq":%d,`, parley.MaxPinsPerRoom+1)
	i := strings.Index(file, last)
	j := strings.Index(file[i:], `"change":0`)
	if i < 0 || j < 0 {
		t.Fatalf("no unpinned message %q in the file", last)
	}
	change := room.LastChange + parley.MaxPinsPerRoom
	over := file[:i+j] + fmt.Sprintf(`"change":%d,"pinned":{"by":%q,"at":"2026-01-01T00:00:00Z","change":%d}`, change, u.ID, change) + file[i+j+len(`"change":0`):]
	dst2, dstPath2 := MustSQLite(t)
	before := MustExportSQLite(t, dstPath2, bulk.Options{})
	if _, err := bulk.Import(ctx, dst2, strings.NewReader(over), bulk.ImportOptions{}); !errors.Is(err, bulk.ErrInvalid) || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("import of %d pins in a room = %v, want invalid, saying so", parley.MaxPinsPerRoom+1, err)
	}
	if after := MustExportSQLite(t, dstPath2, bulk.Options{}); !bytes.Equal(after, before) {
		t.Errorf("the refused file wrote:\n%s", after)
	}
}
