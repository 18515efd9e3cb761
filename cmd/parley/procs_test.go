package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestProcs(t *testing.T) {
	for _, c := range []struct {
		name    string
		flag    int
		env     string
		current int
		sqlite  bool
		want    int
	}{
		{"one core on SQLite: two", 0, "", 1, true, 2},
		{"one core on PostgreSQL: the runtime's", 0, "", 1, false, 0},
		{"two cores: the runtime's", 0, "", 2, true, 0},
		{"eight cores: the runtime's", 0, "", 8, true, 0},
		{"GOMAXPROCS in the environment is kept", 0, "1", 1, true, 0},
		{"GOMAXPROCS=0, which the runtime ignores, is not", 0, "0", 1, true, 2},
		{"GOMAXPROCS not a number, which the runtime ignores, is not", 0, "two", 1, true, 2},
		{"the flag", 1, "", 4, true, 1},
		{"the flag over the environment", 3, "1", 1, true, 3},
		{"-1: the runtime's", -1, "", 1, true, 0},
	} {
		if got := procs(c.flag, c.env, c.current, c.sqlite); got != c.want {
			t.Errorf("%s: procs(%d, %q, %d, %v) = %d, want %d", c.name, c.flag, c.env, c.current, c.sqlite, got, c.want)
		}
	}
}

var procsRE = regexp.MustCompile(`parley serving.* procs=(\d+)`)

// TestServeProcsOnOneCore runs serve as a process on one core (taskset),
// where the runtime alone would run one processor: it runs two, unless
// --procs or GOMAXPROCS says otherwise.
func TestServeProcsOnOneCore(t *testing.T) {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("no taskset (util-linux) to run a process on one core")
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Skipf("no CPU affinity to read: %v", err)
	}
	cpu := -1
	for i := range 1024 {
		if allowed.IsSet(i) {
			cpu = i
			break
		}
	}
	if cpu < 0 {
		t.Skip("no CPU in this process's affinity")
	}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"default", nil, nil, "2"},
		{"--procs 1", nil, []string{"--procs", "1"}, "1"},
		{"--procs -1", nil, []string{"--procs", "-1"}, "1"},
		{"GOMAXPROCS=1", []string{"GOMAXPROCS=1"}, nil, "1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-c", strconv.Itoa(cpu), os.Args[0], "--addr", "127.0.0.1:0", "--data", t.TempDir()}, c.args...)
			cmd := exec.Command(taskset, args...)
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") }), c.env...)
			p := startServeCommand(t, cmd)
			line, _ := p.waitLog(procsRE, 10*time.Second)
			if m := procsRE.FindStringSubmatch(line); m == nil || m[1] != c.want {
				t.Errorf("serving line %q, want procs=%s", line, c.want)
			}
		})
	}
}
