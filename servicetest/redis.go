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
// after Kill it comes back empty, on the same port.
type Redis struct {
	t    testing.TB
	port int
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts a private redis-server, killed at the end of the
// test.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	NeedTools(t, "redis-server")
	r := &Redis{t: t, port: FreePort(t), dir: t.TempDir()}
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// URL is the redis:// URL of the server's database 0.
func (r *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// Addr is the server's host:port.
func (r *Redis) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

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
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	if err := WaitPort(r.port, 10*time.Second); err != nil {
		r.t.Fatalf("redis-server: %v\n%s", err, LastLines(readFile(filepath.Join(r.dir, "redis.log")), 5))
	}
}

// Kill sends SIGKILL and waits for the process; a stopped (paused)
// server dies too.
func (r *Redis) Kill() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// Pause stops the process (SIGSTOP): it keeps its connections and its
// port but answers nothing until Resume.
func (r *Redis) Pause() { r.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (r *Redis) Resume() { r.signal(syscall.SIGCONT) }

func (r *Redis) signal(sig syscall.Signal) {
	r.t.Helper()
	if r.cmd == nil {
		r.t.Fatal("redis-server is not running")
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("signal redis-server: %v", err)
	}
}
