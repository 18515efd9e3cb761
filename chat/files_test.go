package chat_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/files"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// fileDB is a store that keeps files.
type fileDB interface {
	parley.Store
	chat.FileStore
}

// fileStores are the stores the files tests run against: SQLite, and
// PostgreSQL when PARLEY_TEST_POSTGRES is set.
var fileStores = []struct {
	name string
	open func(t *testing.T) fileDB
}{
	{"sqlite", func(t *testing.T) fileDB { return mustOpenStore(t).(fileDB) }},
	{"postgres", func(t *testing.T) fileDB {
		db, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}},
}

// eachStore runs f against each of fileStores.
func eachStore(t *testing.T, f func(t *testing.T, open func(t *testing.T) fileDB)) {
	for _, st := range fileStores {
		t.Run(st.name, func(t *testing.T) { f(t, st.open) })
	}
}

// fileWorld is a chat service with files in a directory, alice and bob
// in a group room, and carol outside it.
type fileWorld struct {
	s                 *chat.Service
	db                fileDB
	dir               string
	alice, bob, carol parley.User
	room, other       parley.Room
	now               time.Time
}

func newFileWorld(t *testing.T, open func(t *testing.T) fileDB, quota int64) *fileWorld {
	t.Helper()
	w := &fileWorld{db: open(t), dir: t.TempDir(), now: parley.Now()}
	blobs, err := files.OpenDir(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	w.s = chat.New(chat.Config{Store: w.db, KDF: cheap, Now: func() time.Time { return w.now },
		Files: &chat.FilesConfig{Store: w.db, Blobs: blobs, MaxSize: 1 << 20, Quota: quota}})
	var users []parley.User
	for _, name := range []string{"alice", "bob", "carol"} {
		u, err := w.s.Register(ctx, name, "correct horse")
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	w.alice, w.bob, w.carol = users[0], users[1], users[2]
	if w.room, _, err = w.s.CreateRoom(ctx, w.alice, chat.NewRoom{Kind: parley.KindGroup, Title: "g"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.s.Join(ctx, w.bob, w.room.ID); err != nil {
		t.Fatal(err)
	}
	if w.other, _, err = w.s.CreateRoom(ctx, w.alice, chat.NewRoom{Kind: parley.KindGroup, Title: "other"}); err != nil {
		t.Fatal(err)
	}
	return w
}

// blobs returns the names of the stored blobs.
func (w *fileWorld) blobs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func smallPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 600, 400))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFileQuotaParallel: uploads at once never take a user past the
// quota, and fill it exactly.
func TestFileQuotaParallel(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		w := newFileWorld(t, open, 10_000)
		data := bytes.Repeat([]byte("x"), 1000)
		var wg sync.WaitGroup
		errs := make([]error, 25)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = w.s.Upload(ctx, w.alice, w.room.ID, fmt.Sprintf("f%d.txt", i), data)
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch parley.ErrorCode(err) {
			case "":
				ok++
			case parley.CodeTooLarge:
			default:
				t.Errorf("Upload error = %v, want nil or too_large", err)
			}
		}
		if ok != 10 {
			t.Errorf("%d uploads of 1000 bytes kept under a quota of 10000, want 10", ok)
		}
		if n := len(w.blobs(t)); n != 10 {
			t.Errorf("%d blobs stored, want 10 (the refused uploads' blobs deleted)", n)
		}
		// Another user has a quota of their own.
		if _, err := w.s.Upload(ctx, w.bob, w.room.ID, "b.txt", data); err != nil {
			t.Errorf("bob's Upload error = %v", err)
		}
	})
}

func TestUploadChecks(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		w := newFileWorld(t, open, 0)
		for _, tt := range []struct {
			name string
			u    parley.User
			data []byte
			want string
		}{
			{"non-member", w.carol, []byte("hi"), parley.CodeForbidden},
			{"empty", w.alice, nil, parley.CodeInvalid},
			{"too large", w.alice, make([]byte, 1<<20+1), parley.CodeTooLarge},
			{"broken image", w.alice, []byte("\x89PNG\r\n\x1a\nbroken"), parley.CodeInvalid},
		} {
			if _, err := w.s.Upload(ctx, tt.u, w.room.ID, "x", tt.data); parley.ErrorCode(err) != tt.want {
				t.Errorf("%s: Upload error = %v, want %s", tt.name, err, tt.want)
			}
		}
		f, err := w.s.Upload(ctx, w.alice, w.room.ID, "../a.png", smallPNG(t))
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != "a.png" || f.Type != "image/png" || !f.Preview {
			t.Errorf("Upload = %+v, want a.png image/png with a preview", f)
		}
		_, rc, err := w.s.OpenFile(ctx, w.alice, f.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := io.ReadAll(rc)
		rc.Close()
		if cfg, format, err := image.DecodeConfig(bytes.NewReader(p)); err != nil || format != "jpeg" || cfg.Width != 320 || cfg.Height != 213 {
			t.Errorf("preview = %s %dx%d %v, want a 320x213 jpeg", format, cfg.Width, cfg.Height, err)
		}
	})
}

func TestSendFiles(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		w := newFileWorld(t, open, 0)
		img, err := w.s.Upload(ctx, w.alice, w.room.ID, "a.png", smallPNG(t))
		if err != nil {
			t.Fatal(err)
		}
		txt, err := w.s.Upload(ctx, w.alice, w.room.ID, "notes.txt", []byte("notes"))
		if err != nil {
			t.Fatal(err)
		}
		bobs, _ := w.s.Upload(ctx, w.bob, w.room.ID, "b.txt", []byte("bob's"))
		elsewhere, _ := w.s.Upload(ctx, w.alice, w.other.ID, "o.txt", []byte("other room"))

		// Unattached: the uploader only.
		if _, _, err := w.s.OpenFile(ctx, w.bob, txt.ID, false); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("bob opens alice's unattached file: %v, want not_found", err)
		}
		for name, ids := range map[string][]string{
			"another user's":    {bobs.ID},
			"another room's":    {elsewhere.ID},
			"unknown":           {"nope"},
			"twice the same":    {txt.ID, txt.ID},
			"one good, one bad": {txt.ID, bobs.ID},
		} {
			if _, _, err := w.s.SendFiles(ctx, w.alice, w.room.ID, "x", "", 0, ids); parley.ErrorCode(err) != parley.CodeInvalid {
				t.Errorf("SendFiles with %s file: %v, want invalid", name, err)
			}
		}
		m, created, err := w.s.SendFiles(ctx, w.alice, w.room.ID, "", "k1", 0, []string{img.ID, txt.ID})
		if err != nil || !created {
			t.Fatalf("SendFiles = %v, %v", created, err)
		}
		if fs := m.Files.List(); len(fs) != 2 || fs[0] != img || fs[1] != txt {
			t.Errorf("message files = %+v, want %+v %+v", m.Files, img, txt)
		}
		again, created, err := w.s.SendFiles(ctx, w.alice, w.room.ID, "", "k1", 0, []string{img.ID, txt.ID})
		if err != nil || created || again.Seq != m.Seq || again.Files != m.Files {
			t.Errorf("repeat SendFiles = seq %d %s, %v, %v; want seq %d with its files, not created", again.Seq, again.Files, created, err, m.Seq)
		}
		if _, _, err := w.s.SendFiles(ctx, w.alice, w.room.ID, "", "k2", 0, []string{txt.ID}); parley.ErrorCode(err) != parley.CodeInvalid {
			t.Errorf("a file carried already, sent again: %v, want invalid", err)
		}
		if rooms, _, err := w.db.Rooms(ctx, w.bob.ID, "", 10); err != nil || len(rooms) != 1 || rooms[0].LastMessage == nil || rooms[0].LastMessage.Files != m.Files {
			t.Errorf("bob's room list = %+v, %v; want the last message with its files", rooms, err)
		}
		page, err := w.s.Messages(ctx, w.bob, w.room.ID, parley.Newest(10))
		if err != nil || len(page) != 1 || len(page[0].Files.List()) != 2 {
			t.Fatalf("history = %+v, %v; want the message with its 2 files", page, err)
		}
		// Attached: every member; not carol.
		if _, rc, err := w.s.OpenFile(ctx, w.bob, txt.ID, false); err != nil {
			t.Errorf("bob opens the attached file: %v", err)
		} else {
			rc.Close()
		}
		if _, _, err := w.s.OpenFile(ctx, w.carol, txt.ID, false); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("carol opens it: %v, want not_found", err)
		}
		// Deleting the message deletes its files, rows and blobs.
		before := len(w.blobs(t))
		del, err := w.s.DeleteMessage(ctx, w.alice, w.room.ID, m.Seq, "")
		if err != nil {
			t.Fatal(err)
		}
		if del.Files != "" {
			t.Errorf("tombstone carries files %+v", del.Files)
		}
		if _, _, err := w.s.OpenFile(ctx, w.alice, img.ID, false); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("file of a deleted message: %v, want not_found", err)
		}
		if after := len(w.blobs(t)); after != before-3 { // the image, its preview, the text
			t.Errorf("blobs %d after the deletion, want %d", after, before-3)
		}
		page, _ = w.s.Messages(ctx, w.bob, w.room.ID, parley.Newest(10))
		if page[0].Files != "" {
			t.Errorf("the tombstone in history carries files %+v", page[0].Files)
		}
	})
}

// TestFileSweep: the sweeper removes what deletions behind the chat
// service's back (retention, a crash between a deletion's commit and its
// files' removal) leave, uploads never attached, and blobs without a row;
// it attaches the files of a send that committed without its attachment.
func TestFileSweep(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		w := newFileWorld(t, open, 0)
		seen := map[string]bool{}
		a, _ := w.s.Upload(ctx, w.alice, w.room.ID, "a.txt", []byte("a"))
		m, _, err := w.s.SendFiles(ctx, w.alice, w.room.ID, "", "", 0, []string{a.ID})
		if err != nil {
			t.Fatal(err)
		}
		// The message is deleted in the store only (as retention does, or a
		// crash before the files' removal).
		if _, _, err := w.db.DeleteMessage(ctx, parley.Deletion{RoomID: w.room.ID, Seq: m.Seq, ActorID: w.alice.ID}); err != nil {
			t.Fatal(err)
		}
		// A send whose attachment did not happen: claimed, sent, unattached.
		b, _ := w.s.Upload(ctx, w.alice, w.room.ID, "b.txt", []byte("b"))
		if _, err := w.db.ClaimFiles(ctx, w.room.ID, w.alice.ID, "r:x", []string{b.ID}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.db.Send(ctx, parley.NewMessage{RoomID: w.room.ID, SenderID: w.alice.ID, Body: "b", Files: parley.NewFileList([]parley.File{b})}); err != nil {
			t.Fatal(err)
		}
		// An upload never attached, and a blob whose row never came.
		c, _ := w.s.Upload(ctx, w.alice, w.room.ID, "c.txt", []byte("c"))
		if err := os.WriteFile(filepath.Join(w.dir, "stray"), []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}

		if n, err := w.s.SweepFiles(ctx, seen); err != nil || n != 1 {
			t.Errorf("first sweep = %d, %v; want 1 (the deleted message's file)", n, err)
		}
		if _, _, err := w.s.OpenFile(ctx, w.alice, a.ID, false); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("the deleted message's file: %v, want not_found", err)
		}
		w.now = w.now.Add(chat.DefaultUnattachedTTL + time.Minute)
		if n, err := w.s.SweepFiles(ctx, seen); err != nil || n != 2 {
			t.Errorf("second sweep = %d, %v; want 2 (the unattached upload, the stray blob)", n, err)
		}
		if _, _, err := w.s.OpenFile(ctx, w.alice, c.ID, false); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("the unattached upload: %v, want not_found", err)
		}
		if _, rc, err := w.s.OpenFile(ctx, w.bob, b.ID, false); err != nil {
			t.Errorf("the file of the send whose attachment was lost: %v, want it attached", err)
		} else {
			rc.Close()
		}
		if got := w.blobs(t); len(got) != 1 || got[0] != b.ID {
			t.Errorf("blobs left = %v, want %s only", got, b.ID)
		}
	})
}

// TestDeleteAccountFiles: an account's deletion erases its messages'
// files with them (the operator did not keep the messages).
func TestDeleteAccountFiles(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		w := newFileWorld(t, open, 0)
		s := chat.New(chat.Config{Store: w.db, KDF: cheap, Accounts: w.db.(chat.Accounts),
			Files: &chat.FilesConfig{Store: w.db, Blobs: mustDir(t, w.dir)}})
		f, err := s.Upload(ctx, w.bob, w.room.ID, "b.txt", []byte("bob's"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.SendFiles(ctx, w.bob, w.room.ID, "mine", "", 0, []string{f.ID}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteAccount(ctx, w.bob, "correct horse"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.OpenFile(ctx, w.alice, f.ID, false); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("the deleted account's file: %v, want not_found", err)
		}
		if got := w.blobs(t); len(got) != 0 {
			t.Errorf("blobs left = %v, want none", got)
		}
	})
}

func mustDir(t *testing.T, dir string) *files.Dir {
	t.Helper()
	d, err := files.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestExportFiles: ExportFiles lists the files a user uploaded, attached
// or not, oldest first, and none of another's.
func TestExportFiles(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		w := newFileWorld(t, open, 0)
		a, _ := w.s.Upload(ctx, w.alice, w.room.ID, "a.txt", []byte("first"))
		w.now = w.now.Add(time.Second)
		b, _ := w.s.Upload(ctx, w.alice, w.other.ID, "b.txt", []byte("second"))
		if _, err := w.s.Upload(ctx, w.bob, w.room.ID, "c.txt", []byte("bob's")); err != nil {
			t.Fatal(err)
		}
		m, _, err := w.s.SendFiles(ctx, w.alice, w.room.ID, "", "", 0, []string{a.ID})
		if err != nil {
			t.Fatal(err)
		}
		fs, err := w.s.ExportFiles(ctx, w.alice)
		if err != nil || len(fs) != 2 || fs[0].ID != a.ID || fs[0].Seq != m.Seq || fs[0].Size != 5 || len(fs[0].SHA256) != 32 ||
			fs[1].ID != b.ID || fs[1].RoomID != w.other.ID || fs[1].Seq != 0 {
			t.Errorf("ExportFiles(alice) = %+v, %v; want a.txt (sent at seq %d) then b.txt (unattached)", fs, err, m.Seq)
		}
	})
}

// TestExportFilesOfRoomsLeft: the export's files are those their download
// path fetches (GET /api/files/{id}, OpenFile): a file bob uploaded in a
// room he has left since, which OpenFile refuses him, is not in it, as
// the room is not (docs/api.md, "Your own data").
func TestExportFilesOfRoomsLeft(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		w := newFileWorld(t, open, 0)
		f, err := w.s.Upload(ctx, w.bob, w.room.ID, "left.txt", []byte("left behind"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.s.SendFiles(ctx, w.bob, w.room.ID, "", "", 0, []string{f.ID}); err != nil {
			t.Fatal(err)
		}
		if fs, err := w.s.ExportFiles(ctx, w.bob); err != nil || len(fs) != 1 {
			t.Fatalf("ExportFiles(bob) as a member = %+v, %v; want left.txt", fs, err)
		}
		if err := w.s.Leave(ctx, w.bob, w.room.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.s.OpenFile(ctx, w.bob, f.ID, false); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Fatalf("OpenFile by bob after leaving: %v, want not found", err)
		}
		if fs, err := w.s.ExportFiles(ctx, w.bob); err != nil || len(fs) != 0 {
			t.Errorf("ExportFiles(bob) after leaving = %+v, %v; want none: its download would be refused", fs, err)
		}
	})
}
