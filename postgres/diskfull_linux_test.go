package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/servicetest"
)

// TestDiskFullOnRealPostgres fills a real disk under PostgreSQL: a private
// cluster whose database lives in a tablespace on a small tmpfs (its WAL
// stays on the cluster's own disk, so PostgreSQL answers disk_full, 53100,
// when a table cannot grow, rather than stopping). Sends are refused as
// unavailable saying the storage is full, logged once, reads go on, and
// once the filler is deleted sends resume at the next seq with no hole.
// It needs root (the mount, pg_createcluster) and runs with the
// real-service tests (PARLEY_TEST_POSTGRES set).
func TestDiskFullOnRealPostgres(t *testing.T) {
	if testing.Short() || os.Getenv("PARLEY_TEST_POSTGRES") == "" {
		t.Skip("PARLEY_TEST_POSTGRES is not set: the real-service tests are off (this one starts a private cluster)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs for a tablespace")
	}
	servicetest.NeedTools(t, "pg_createcluster", "pg_ctlcluster", "pg_dropcluster")
	// Mounted first, unmounted last: after the cluster is dropped.
	small := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(small); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=24m,mode=0700"); err != nil {
		t.Skipf("mount a tmpfs on %s: %v (needs CAP_SYS_ADMIN)", small, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(small, 0); err != nil {
			t.Errorf("unmount %s: %v", small, err)
			syscall.Unmount(small, syscall.MNT_DETACH)
		}
	})
	if out, err := exec.Command("chown", "postgres:postgres", small).CombinedOutput(); err != nil {
		t.Fatalf("chown %s: %v: %s", small, err, out)
	}
	pg := servicetest.StartPostgres(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{"CREATE TABLESPACE small LOCATION '" + small + "'", "CREATE DATABASE filled TABLESPACE small"} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	u, err := url.Parse(pg.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/filled"
	logs := &logCounter{n: map[string]int{}}
	// No search indexer: its rounds (an UPDATE of the new rows) would take
	// and give back pages between the sends, so that a send refused could
	// fit again. This is the send path's refusal alone.
	s, err := postgres.Open(ctx, postgres.Config{URL: u.String(), Logger: slog.New(logs), NoSearchIndex: true})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	clock := parleytest.NewClock()
	postgres.SetFullClock(s, clock.Now)
	alice := parleytest.MustCreateUser(t, s, "alice")
	r := parleytest.MustCreateRoom(t, s, alice, "full", 0)
	send := func(body, clientID string) (parley.Message, bool, error) {
		return s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: alice.ID, SenderName: alice.Name, Body: body, ClientID: clientID})
	}
	var accepted []parley.Message
	m, _, err := send("before", "b0")
	if err != nil {
		t.Fatalf("Send() before the disk is full: %v", err)
	}
	accepted = append(accepted, m)

	filler := filepath.Join(small, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for size := len(chunk); size > 0; {
		if _, err := f.Write(chunk[:size]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			size /= 2
		}
	}
	f.Close()

	body := strings.Repeat("z", 4000)
	var refusedID string
	for i := 0; refusedID == "" && i < 3000; i++ {
		id := fmt.Sprintf("f%d", i)
		m, _, err := send(body, id)
		if err == nil {
			accepted = append(accepted, m)
			continue
		}
		msg := parley.ErrorMessage(err)
		if parley.ErrorCode(err) != parley.CodeUnavailable || !strings.Contains(msg, "storage is full") || !strings.Contains(msg, "same client-id") {
			t.Fatalf("Send() on a full disk = %v, want unavailable saying the storage is full, to send again with the same client-id", err)
		}
		refusedID = id
	}
	if refusedID == "" {
		t.Fatal("3,000 sends of 4 KB fitted on a full 24 MiB tmpfs")
	}
	t.Logf("%d sends accepted after the filler, until %s was refused", len(accepted)-1, refusedID)
	const more = 20
	for range more {
		if _, _, err := send(body, refusedID); parley.ErrorCode(err) != parley.CodeUnavailable {
			t.Fatalf("Send() again on a full disk = %v, want unavailable", err)
		}
	}
	if since, n := s.StorageFull(); since.IsZero() || n != 1+more {
		t.Errorf("StorageFull() = %v, %d on a full disk, want a time and %d", since, n, 1+more)
	}
	if got, err := s.Messages(ctx, r.ID, parley.Newest(parley.MaxPageLimit)); err != nil || len(got) != min(len(accepted), parley.MaxPageLimit) {
		t.Errorf("Messages() on a full disk = %d, %v; want %d", len(got), err, min(len(accepted), parley.MaxPageLimit))
	}
	if n := logs.count("postgres: storage full"); n != 1 {
		t.Errorf("%d log lines saying the storage is full, want 1", n)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	clock.Advance(postgres.FullQuiet)
	m, created, err := send(body, refusedID)
	if err != nil || !created {
		t.Fatalf("Send() after space is freed = %v, %v; want a new message", created, err)
	}
	if want := accepted[len(accepted)-1].Seq + 1; m.Seq != want {
		t.Errorf("Send() after space is freed: seq %d, want %d (the next, no hole)", m.Seq, want)
	}
	accepted = append(accepted, m)
	var got []parley.Message
	for after := int64(0); ; {
		page, err := s.Messages(ctx, r.ID, parley.Page{After: after, Limit: parley.MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].Seq
	}
	for i, gm := range got {
		if gm.Seq != int64(i+1) || i >= len(accepted) || gm.ID != accepted[i].ID {
			t.Fatalf("history after the full disk: message %d is seq %d, want seq %d, each accepted message once", i, gm.Seq, i+1)
		}
	}
	if len(got) != len(accepted) {
		t.Errorf("history after the full disk: %d messages, want %d", len(got), len(accepted))
	}
	if n := logs.count("postgres: storage has room again"); n != 1 {
		t.Errorf("%d log lines saying the storage has room again, want 1", n)
	}
	if since, _ := s.StorageFull(); !since.IsZero() {
		t.Errorf("StorageFull() after space is freed = %v, want zero", since)
	}
}
