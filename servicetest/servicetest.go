// Package servicetest starts private instances of the services the
// real-service tests use (redis-server, RabbitMQ, PostgreSQL), for the
// tests that stop, kill or pause one: each has its own port, data
// directory and logs under the test's t.TempDir(), and is stopped at the
// end of the test at the latest, so the shared services on the standard
// ports are never touched. Only tests import it (layout_test.go checks).
//
// Each service has one starter (StartRedis, StartRabbit, StartPostgres)
// and the same controls: Stop (a clean shutdown), Kill (SIGKILL, as a
// crash), Start (again, after Stop or Kill), Restart (Stop and Start, same
// port and data directory), Freeze and Thaw (SIGSTOP and SIGCONT of every
// process of the instance, not only the first: RabbitMQ's beam.smp, its
// helpers and its own epmd, PostgreSQL's postmaster and its backends;
// the sockets stay open and nothing answers) and PIDs. Stop, Kill and the
// end of the test thaw a frozen instance first, so that no stopped
// process outlives a failed test; a test's own cleanups registered after
// the starter run before that, so a test that freezes defers its Thaw.
//
// A starter skips the test, naming the tool, when the tool is not
// installed.
package servicetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// NeedTools skips the test unless every tool is on the PATH.
func NeedTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: this test starts a private instance of it", tool)
		}
	}
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// WaitPort waits until 127.0.0.1:port accepts connections, at most d.
func WaitPort(port int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port %d not open after %v: %w", port, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// LastLines returns the last n lines of s (the tail of a log for a
// failure message).
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
