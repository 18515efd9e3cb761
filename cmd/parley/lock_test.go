package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testConfig is MustOpenMain's configuration on the data directory dir.
func testConfig(dir string) Config {
	return Config{
		Addr: "127.0.0.1:0", Data: dir, Sync: "normal",
		TokenTTL: time.Hour, MaxBody: 4096, KDF: testKDF,
	}
}

// openFails opens a node on dir, which must fail naming dir and the
// holder's pid, and cleans up after it as serve does.
func openFails(t *testing.T, dir string, pid int) {
	t.Helper()
	b := &Main{Config: testConfig(dir)}
	err := b.Open(context.Background())
	b.Close(context.Background())
	if err == nil {
		t.Fatalf("second node on %s opened, want it refused", dir)
	}
	for _, want := range []string{dir, "process " + strconv.Itoa(pid)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("second node on %s: %v; want an error naming %q", dir, err, want)
		}
	}
}

// TestDataDirectoryLock: a second node on the data directory of a running
// one is refused, naming the directory and the holder's pid, and that
// refusal leaves the first one's lock in place; once the first closes,
// the directory is free.
func TestDataDirectoryLock(t *testing.T) {
	dir := t.TempDir()
	a := &Main{Config: testConfig(dir)}
	if err := a.Open(context.Background()); err != nil {
		t.Fatalf("open first node: %v", err)
	}
	openFails(t, dir, os.Getpid())
	openFails(t, dir, os.Getpid()) // the refused node's Close released nothing
	if _, u := mustSignUp(t, a.Addr(), "ann"); u.Name != "ann" {
		t.Errorf("first node after the refusals: signed up %+v, want ann", u)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatalf("close first node: %v", err)
	}

	b := &Main{Config: testConfig(dir)}
	if err := b.Open(context.Background()); err != nil {
		t.Fatalf("node on %s after the first closed: %v", dir, err)
	}
	defer b.Close(context.Background())
	if st := newClient(t, b.Addr()).do("POST", "/api/tokens", map[string]string{"name": "ann", "password": "correct horse"}, nil); st != http.StatusCreated {
		t.Errorf("log in on the second node = %d, want 201 (same data)", st)
	}
}

// TestDataDirectoryLockAfterKill: the lock of a server process is named
// with its pid, and the kernel drops it when the process is killed.
func TestDataDirectoryLockAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	dir := t.TempDir()
	p := startServeProcess(t, "--data", dir, "--sync", "normal")
	openFails(t, dir, p.cmd.Process.Pid)
	p.kill()
	MustOpenMain(t, func(c *Config) { c.Data = dir })
}

// TestMigrateLiveDirectory: `parley migrate` refuses the data directory of
// a running server, which would go on with the old schema; a dry run,
// which only reads, still reports.
func TestMigrateLiveDirectory(t *testing.T) {
	dir := t.TempDir()
	m := &Main{Config: testConfig(dir)}
	if err := m.Open(context.Background()); err != nil {
		t.Fatalf("open node: %v", err)
	}
	migrate := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(context.Background(), append([]string{"migrate", "--data", dir}, args...), &out, &errs)
		return out.String(), err
	}
	if _, err := migrate(); err == nil || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Errorf("parley migrate on a live directory: %v, want it refused naming pid %d", err, os.Getpid())
	}
	if out, err := migrate("--dry-run"); err != nil || !strings.Contains(out, "up to date") {
		t.Errorf("parley migrate --dry-run on a live directory = %q, %v; want up to date", out, err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, err := migrate(); err != nil || !strings.Contains(out, "up to date") {
		t.Errorf("parley migrate after the server closed = %q, %v; want up to date", out, err)
	}
	MustOpenMain(t, func(c *Config) { c.Data = dir }) // migrate let go of it
}
