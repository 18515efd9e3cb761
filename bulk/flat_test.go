package bulk_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"parley"
	"parley/bulk"
	"parley/postgres"
	"parley/sqlite"
)

// synthetic is a bulk.Source that makes its records up as it streams
// them: users accounts, rooms rooms of perRoom messages each, every
// account a member of every room. It holds nothing.
type synthetic struct {
	users, rooms, perRoom int
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (s synthetic) userID(i int) string { return fmt.Sprintf("user%06d", i) }
func (s synthetic) roomID(i int) string { return fmt.Sprintf("room%06d", i) }

func (s synthetic) Users(_ context.Context, _ string, _ bool, each func(*bulk.User) error) error {
	for i := range s.users {
		u := bulk.User{User: parley.User{ID: s.userID(i), Name: fmt.Sprintf("name%06d", i)}, CreatedAt: t0}
		if err := each(&u); err != nil {
			return err
		}
	}
	return nil
}

func (synthetic) Tokens(context.Context, string, func(*bulk.Token) error) error   { return nil }
func (synthetic) APIKeys(context.Context, string, func(*bulk.APIKey) error) error { return nil }
func (synthetic) NameHolds(context.Context, func(*bulk.NameHold) error) error     { return nil }

func (s synthetic) room(i int) bulk.Room {
	return bulk.Room{Room: parley.Room{ID: s.roomID(i), Kind: parley.KindGroup, Title: fmt.Sprintf("Room %d", i),
		MemberCount: s.users, LastSeq: int64(s.perRoom), LastActivityAt: t0.Add(time.Duration(s.perRoom) * time.Second)}, CreatedAt: t0}
}

func (s synthetic) Rooms(_ context.Context, after string, limit int) ([]bulk.Room, error) {
	var out []bulk.Room
	for i := range s.rooms {
		if r := s.room(i); r.ID > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s synthetic) Room(_ context.Context, id string) (bulk.Room, error) {
	for i := range s.rooms {
		if r := s.room(i); r.ID == id {
			return r, nil
		}
	}
	return bulk.Room{}, parley.Errorf(parley.CodeNotFound, "no room %q", id)
}

func (s synthetic) Messages(_ context.Context, roomID string, each func(*parley.Message) error) error {
	for seq := 1; seq <= s.perRoom; seq++ {
		u := seq % s.users
		m := parley.Message{ID: fmt.Sprintf("%s-m%08d", roomID, seq), RoomID: roomID, Seq: int64(seq), SenderID: s.userID(u),
			SenderName: fmt.Sprintf("name%06d", u), Body: fmt.Sprintf("message %d of %s: a few words to search for, as chats have", seq, roomID),
			SentAt: t0.Add(time.Duration(seq) * time.Second)}
		if err := each(&m); err != nil {
			return err
		}
	}
	return nil
}

func (synthetic) ChangeKeys(context.Context, string, func(*bulk.ChangeKey) error) error { return nil }
func (synthetic) Reactions(context.Context, string, func(*bulk.Reaction) error) error   { return nil }
func (synthetic) Files(context.Context, string, func(*bulk.File) error) error           { return nil }
func (synthetic) Bans(context.Context, string, func(*parley.Ban) error) error           { return nil }

func (s synthetic) Members(_ context.Context, roomID string, each func(*bulk.Member) error) error {
	for i := range s.users {
		role := parley.RoleMember
		if i == 0 {
			role = parley.RoleOwner
		}
		m := bulk.Member{Member: parley.Member{RoomID: roomID, UserID: s.userID(i), Role: role, JoinedAt: t0}}
		if err := each(&m); err != nil {
			return err
		}
	}
	return nil
}

// writeSynthetic exports src to a new file and returns its path.
func writeSynthetic(t testing.TB, src synthetic) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synthetic.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := bulk.Export(ctx, src, f, bulk.Options{Source: "synthetic"}); err != nil {
		t.Fatalf("export: %v", err)
	}
	return path
}

// heapPeak tracks the live heap (after a collection) at sampled moments.
type heapPeak struct {
	every, n int
	peak     uint64
}

func (h *heapPeak) sample() {
	if h.n++; h.n%h.every != 0 {
		return
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = max(h.peak, ms.HeapAlloc)
}

// Write samples the heap every so many lines of an export.
func (h *heapPeak) Write(b []byte) (int, error) {
	h.sample()
	return len(b), nil
}

// TestMemoryFlat: importing and exporting ten times the messages takes
// no more live heap: both stream, a batch or a record at a time.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("imports and exports 110,000 messages")
	}
	peaks := map[int][2]uint64{}
	for _, perRoom := range []int{1_000, 10_000} {
		file := writeSynthetic(t, synthetic{users: 50, rooms: 10, perRoom: perRoom})
		dst, path := MustSQLite(t)
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		imp := heapPeak{every: 5}
		_, err = bulk.Import(ctx, dst, f, bulk.ImportOptions{AfterBatch: func(context.Context, *bulk.Batch) error {
			imp.sample()
			return nil
		}})
		f.Close()
		if err != nil {
			t.Fatalf("import: %v", err)
		}
		snap, err := sqlite.OpenSnapshot(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		// bulk.Export writes through a 64 KiB buffer: one sample every
		// 20 writes is one every ~1.3 MB of the file.
		exp := heapPeak{every: 20}
		c, err := bulk.Export(ctx, snap, io.Writer(&exp), bulk.Options{Source: "sqlite"})
		snap.Close()
		if err != nil || c.Messages != int64(10*perRoom) {
			t.Fatalf("export: %d messages, %v", c.Messages, err)
		}
		peaks[perRoom] = [2]uint64{imp.peak, exp.peak}
		t.Logf("%d messages: live heap at most %d KiB importing, %d KiB exporting", 10*perRoom, imp.peak>>10, exp.peak>>10)
	}
	// The file of 100,000 messages is about 25 MB: a store or a format
	// holding it, or a table of it, would show several MB more.
	const slack = 2 << 20
	for i, what := range []string{"import", "export"} {
		small, big := peaks[1_000][i], peaks[10_000][i]
		if small == 0 || big > small+slack {
			t.Errorf("%s: live heap %d KiB for 10,000 messages, %d KiB for 100,000: want flat (within %d KiB)", what, small>>10, big>>10, slack>>10)
		}
	}
}

// benchFile is the benchmarks' file: 10 rooms of 10,000 messages.
var benchShape = synthetic{users: 50, rooms: 10, perRoom: 10_000}

// BenchmarkImportSQLite imports 100,000 messages into a new SQLite store
// each round, with parley import's setting (sync normal).
func BenchmarkImportSQLite(b *testing.B) {
	benchImport(b, func() bulk.Sink {
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "parley.db"), Sync: sqlite.SyncNormal})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkImportPostgres imports 100,000 messages into a new schema each
// round.
func BenchmarkImportPostgres(b *testing.B) {
	benchImport(b, func() bulk.Sink {
		s, _ := MustPostgres(b)
		return s
	})
}

// BenchmarkExportPostgres exports 100,000 messages from PostgreSQL each
// round.
func BenchmarkExportPostgres(b *testing.B) {
	dst, url := MustPostgres(b)
	benchExport(b, dst, func() (source, error) { return postgres.OpenSnapshot(ctx, url) })
}

// source is a snapshot of either store.
type source interface {
	bulk.Source
	Close() error
}

// benchExport fills dst with benchShape, then exports a snapshot each
// round.
func benchExport(b *testing.B, dst bulk.Sink, open func() (source, error)) {
	f, err := os.Open(writeSynthetic(b, benchShape))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := bulk.Import(ctx, dst, f, bulk.ImportOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		snap, err := open()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bulk.Export(ctx, snap, io.Discard, bulk.Options{}); err != nil {
			b.Fatal(err)
		}
		snap.Close()
	}
	b.ReportMetric(float64(b.N*benchShape.rooms*benchShape.perRoom)/time.Since(start).Seconds(), "messages/s")
}

func benchImport(b *testing.B, open func() bulk.Sink) {
	file := writeSynthetic(b, benchShape)
	var took time.Duration
	for range b.N {
		b.StopTimer()
		dst := open()
		f, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := bulk.Import(ctx, dst, f, bulk.ImportOptions{}); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		f.Close()
	}
	b.ReportMetric(float64(b.N*benchShape.rooms*benchShape.perRoom)/took.Seconds(), "messages/s")
}

// BenchmarkExportSQLite exports 100,000 messages from a SQLite store each
// round.
func BenchmarkExportSQLite(b *testing.B) {
	dst, path := MustSQLite(b)
	benchExport(b, dst, func() (source, error) { return sqlite.OpenSnapshot(ctx, path) })
}
