package servicetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Redis is a private redis-server without persistence: started again
// after Stop or Kill it comes back empty, on the same port.
type Redis struct {
	t     testing.TB
	port  int
	dir   string
	procs procs
	cmd   *exec.Cmd
	// exited receives the process's end once it has been started.
	exited chan error
}

// StartRedis starts a private redis-server, thawed and killed at the end
// of the test.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	NeedTools(t, "redis-server")
	r := &Redis{t: t, port: FreePort(t), dir: t.TempDir()}
	r.procs = procs{name: "redis-server " + r.Addr(), root: r.pid}
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// URL is the redis:// URL of the server's database 0.
func (r *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// Addr is the server's host:port.
func (r *Redis) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func (r *Redis) pid() int {
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Start starts the server (empty) and waits for its port.
func (r *Redis) Start() {
	r.t.Helper()
	log, err := os.OpenFile(filepath.Join(r.dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer log.Close()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir)
	r.cmd.Stdout, r.cmd.Stderr = log, log
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan error, 1)
	go func(c *exec.Cmd) { exited <- c.Wait() }(r.cmd)
	r.exited = exited
	if err := WaitPort(r.port, 10*time.Second); err != nil {
		r.t.Fatalf("redis-server: %v\n%s", err, LastLines(readFile(filepath.Join(r.dir, "redis.log")), 5))
	}
}

// Stop thaws the server, asks it to end (SIGTERM) and waits for it.
func (r *Redis) Stop() {
	r.t.Helper()
	if r.cmd == nil {
		return
	}
	r.procs.thaw(r.t)
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.t.Errorf("redis-server %s did not end 30 s after SIGTERM: killed", r.Addr())
		r.procs.kill()
		<-r.exited
	}
	r.cmd = nil
}

// Kill sends SIGKILL and waits for the process; a frozen server dies too
// (it is thawed first).
func (r *Redis) Kill() {
	if r.cmd == nil {
		return
	}
	if err := r.procs.kill(); err != nil {
		r.t.Error(err)
	}
	<-r.exited
	r.cmd = nil
}

// Restart stops the server and starts it again, empty, on the same port
// and directory.
func (r *Redis) Restart() {
	r.t.Helper()
	r.Stop()
	r.Start()
}

// Freeze stops the server (SIGSTOP) and waits until it is stopped: it
// keeps its connections and its port but answers nothing until Thaw.
func (r *Redis) Freeze() { r.t.Helper(); r.procs.freeze(r.t) }

// Thaw continues a frozen server (SIGCONT) and waits until it runs; it
// does nothing when the server is not frozen.
func (r *Redis) Thaw() { r.t.Helper(); r.procs.thaw(r.t) }

// PIDs returns the pids of the server's processes (one), for a test that
// checks them.
func (r *Redis) PIDs() []int { return r.procs.pids() }
