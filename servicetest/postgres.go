package servicetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a private PostgreSQL cluster made with pg_createcluster,
// with trust authentication on its own port, its data and log under the
// test's temporary directory, and a database "parley"; it is dropped at
// the end of the test.
type Postgres struct {
	t       testing.TB
	version string
	name    string
	port    int
	data    string // the data directory
	log     string // the server's log
	procs   procs
}

var pgCount atomic.Int32

// StartPostgres creates and starts a private PostgreSQL cluster.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	NeedTools(t, "pg_createcluster", "pg_ctlcluster", "pg_dropcluster")
	versions, _ := filepath.Glob("/etc/postgresql/*")
	if len(versions) == 0 {
		t.Skip("pg_createcluster is installed but /etc/postgresql has no version")
	}
	sort.Strings(versions)
	c := &Postgres{
		t:       t,
		version: filepath.Base(versions[len(versions)-1]),
		name:    fmt.Sprintf("chaos%d_%d", os.Getpid(), pgCount.Add(1)),
		port:    FreePort(t),
	}
	c.procs = procs{name: "postgres " + c.name, root: c.postmaster}
	// The postgres user must reach the data directory.
	dir := t.TempDir()
	c.data, c.log = filepath.Join(dir, "data"), filepath.Join(dir, "postgresql.log")
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	out, err := exec.Command("pg_createcluster", c.version, c.name, "-p", strconv.Itoa(c.port),
		"-d", c.data, "-l", c.log,
		"--", "--auth=trust").CombinedOutput()
	if err != nil {
		t.Fatalf("pg_createcluster: %v: %s", err, LastLines(string(out), 5))
	}
	t.Cleanup(func() {
		c.procs.thaw(t)
		if out, err := exec.Command("pg_dropcluster", "--stop", c.version, c.name).CombinedOutput(); err != nil {
			t.Errorf("pg_dropcluster %s: %v: %s", c.name, err, out)
		}
	})
	c.Start()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.AdminURL())
	if err != nil {
		t.Fatalf("connect to %s: %v", c.name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE parley"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return c
}

// AdminURL is the cluster's postgres database.
func (c *Postgres) AdminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// URL is the database "parley", for the nodes.
func (c *Postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/parley?sslmode=disable", c.port)
}

func (c *Postgres) ctl(action string, extra ...string) {
	c.t.Helper()
	args := append([]string{"--skip-systemctl-redirect"}, extra...)
	args = append(args, c.version, c.name, action)
	if out, err := exec.Command("pg_ctlcluster", args...).CombinedOutput(); err != nil {
		c.t.Fatalf("pg_ctlcluster %s %s: %v: %s\n%s", c.name, action, err, out, LastLines(readFile(c.log), 10))
	}
}

// Start starts the cluster and waits for its port.
func (c *Postgres) Start() {
	c.t.Helper()
	c.ctl("start")
	if err := WaitPort(c.port, 30*time.Second); err != nil {
		c.t.Fatal(err)
	}
}

// Stop thaws the cluster and stops it, disconnecting every client (fast
// mode).
func (c *Postgres) Stop() {
	c.t.Helper()
	c.procs.thaw(c.t)
	c.ctl("stop", "-m", "fast")
}

// Kill ends the cluster as a crash would: SIGKILL to the postmaster and
// every backend (thawed first); it waits until they are gone. Start
// starts it again, with crash recovery.
func (c *Postgres) Kill() {
	c.t.Helper()
	if err := c.procs.kill(); err != nil {
		c.t.Fatal(err)
	}
}

// Restart stops the cluster and starts it again, on the same port and
// data directory.
func (c *Postgres) Restart() {
	c.t.Helper()
	c.Stop()
	c.Start()
}

// Freeze stops (SIGSTOP) the postmaster and every backend and waits until
// they are stopped: the connections and the port stay open, nothing
// answers until Thaw.
func (c *Postgres) Freeze() { c.t.Helper(); c.procs.freeze(c.t) }

// Thaw continues a frozen cluster (SIGCONT) and waits until every process
// runs; it does nothing when the cluster is not frozen.
func (c *Postgres) Thaw() { c.t.Helper(); c.procs.thaw(c.t) }

// PIDs returns the pids of the cluster's processes, the postmaster first,
// for a test that checks them.
func (c *Postgres) PIDs() []int { return c.procs.pids() }

// postmaster is the pid in postmaster.pid, 0 when there is none.
func (c *Postgres) postmaster() int {
	b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0
	}
	// A stale file (after Kill) may name a pid another process has now:
	// the postmaster works in its data directory.
	cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	if err != nil {
		return 0
	}
	if data, err := filepath.EvalSymlinks(c.data); err != nil || cwd != data {
		return 0
	}
	return pid
}
