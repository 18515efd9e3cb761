package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProcs(t *testing.T) {
	for _, c := range []struct {
		name          string
		flag          int
		env           string
		current, want int
	}{
		{"one core: two", 0, "", 1, 2},
		{"two cores: the runtime's", 0, "", 2, 0},
		{"eight cores: the runtime's", 0, "", 8, 0},
		{"GOMAXPROCS in the environment is kept", 0, "1", 1, 0},
		{"the flag", 1, "", 4, 1},
		{"the flag over the environment", 3, "1", 1, 3},
	} {
		if got := procs(c.flag, c.env, c.current); got != c.want {
			t.Errorf("%s: procs(%d, %q, %d) = %d, want %d", c.name, c.flag, c.env, c.current, got, c.want)
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
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"default", nil, nil, "2"},
		{"--procs 1", nil, []string{"--procs", "1"}, "1"},
		{"GOMAXPROCS=1", []string{"GOMAXPROCS=1"}, nil, "1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-c", "0", os.Args[0], "--addr", "127.0.0.1:0", "--data", t.TempDir()}, c.args...)
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
