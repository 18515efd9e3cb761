package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The docs test: every shell block of README.md and docs/*.md runs against
// a fresh `parley serve`, or says above it why it cannot.
//
// A block is a fenced block whose info string is sh, bash, shell or
// console (console: only its "$ " lines are commands). One marked with
//
//	<!-- docs-test: skip (the reason) -->
//
// on the line above its fence is listed as skipped with its reason. The
// blocks of one file run in order in one bash process (set -e, pipefail),
// so that what a block sets (a token, a room id) carries to the next, in
// a fresh directory holding the server's data as ./data, with `parley`
// (this test binary as the CLI) on the PATH and as ./parley,
// 127.0.0.1:8080 and localhost:8080 replaced by the server's address,
// and curl failing on an HTTP error status.

// docFiles are the documents whose blocks run: the README and docs/, but
// for docs/perf-log.md, a diary of past experiments whose commands record
// what was run then, not what to run.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"../../README.md"}
	for _, f := range files {
		if filepath.Base(f) != "perf-log.md" {
			out = append(out, f)
		}
	}
	return out
}

// docBlock is one fenced shell block of a markdown file.
type docBlock struct {
	file string // path of the markdown file
	line int    // line of its opening fence, from 1
	text string // the commands
	skip string // why it does not run; "" when it runs
}

var (
	docSkipRE   = regexp.MustCompile(`^<!-- docs-test: skip \((.+)\) -->$`)
	docMarkerRE = regexp.MustCompile(`<!--\s*docs-test`)
	fenceRE     = regexp.MustCompile("^(`{3,})\\s*([A-Za-z0-9_-]*)")
)

// shellInfo are the info strings of the blocks that are run.
var shellInfo = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// parseDocBlocks returns the shell blocks of a markdown text. A docs-test
// comment that is not a well-formed skip right above a shell block's
// fence is an error, so that a mistyped mark cannot silence a block.
func parseDocBlocks(file string, data []byte) ([]docBlock, error) {
	var (
		blocks  []docBlock
		lines   = strings.Split(string(data), "\n")
		pending string // reason of a skip mark on the previous line
		pendAt  int
	)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			fence, info, start := m[1], m[2], i+1
			var body []string
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], fence); i++ {
				body = append(body, lines[i])
			}
			if i == len(lines) {
				return nil, fmt.Errorf("%s:%d: fence not closed", file, start)
			}
			if !shellInfo[info] {
				if pending != "" {
					return nil, fmt.Errorf("%s:%d: docs-test mark above a %q block, which is not run", file, pendAt, info)
				}
				continue
			}
			if info == "console" {
				var cmds []string
				for _, l := range body {
					if c, ok := strings.CutPrefix(l, "$ "); ok {
						cmds = append(cmds, c)
					}
				}
				body = cmds
			}
			blocks = append(blocks, docBlock{file: file, line: start, text: strings.Join(body, "\n"), skip: pending})
			pending = ""
			continue
		}
		if pending != "" {
			return nil, fmt.Errorf("%s:%d: docs-test mark not right above a shell block", file, pendAt)
		}
		if docMarkerRE.MatchString(line) {
			m := docSkipRE.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				return nil, fmt.Errorf("%s:%d: malformed docs-test mark %q, want <!-- docs-test: skip (reason) -->", file, i+1, line)
			}
			pending, pendAt = m[1], i+1
		}
	}
	if pending != "" {
		return nil, fmt.Errorf("%s:%d: docs-test mark at the end of the file", file, pendAt)
	}
	return blocks, nil
}

// docScript is the bash script that runs a file's blocks in order against
// the server at addr, each after a marker line naming its index.
func docScript(blocks []docBlock, addr string) string {
	var b strings.Builder
	b.WriteString("set -eo pipefail\n")
	b.WriteString("curl() { command curl --fail-with-body --max-time 30 \"$@\"; }\n")
	for i, blk := range blocks {
		text := strings.NewReplacer("127.0.0.1:8080", addr, "localhost:8080", addr).Replace(blk.text)
		fmt.Fprintf(&b, "printf '\\n@@docs-test block %d\\n'\n%s\n", i, text)
	}
	b.WriteString("printf '\\n@@docs-test done\\n'\n")
	return b.String()
}

var docBlockMarkRE = regexp.MustCompile(`(?m)^@@docs-test block (\d+)$`)

// runDocBlocks runs the blocks in dir (see docScript) and returns an error
// naming the block that failed, with its commands and its output.
func runDocBlocks(ctx context.Context, dir, addr string, blocks []docBlock, env []string) error {
	cmd := exec.CommandContext(ctx, "bash", "-c", docScript(blocks, addr))
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err == nil && bytes.HasSuffix(bytes.TrimSpace(out), []byte("@@docs-test done")) {
		return nil
	}
	failed, since := -1, 0
	for _, m := range docBlockMarkRE.FindAllSubmatchIndex(out, -1) {
		fmt.Sscan(string(out[m[2]:m[3]]), &failed)
		since = m[1]
	}
	if failed < 0 {
		return fmt.Errorf("bash: %v before the first block:\n%s", err, out)
	}
	blk := blocks[failed]
	return fmt.Errorf("%s:%d: block failed (%v; mark it <!-- docs-test: skip (reason) --> if it cannot run here):\n%s\n--- output:\n%s",
		blk.file, blk.line, err, blk.text, bytes.TrimSpace(out[since:]))
}

// docEnv is the environment of a file's blocks: `parley` on the PATH is
// this test binary as the CLI (TestMain, PARLEY_TEST_EXEC_CLI).
func docEnv(t *testing.T, dir string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{filepath.Join(bin, "parley"), filepath.Join(dir, "parley")} {
		if err := os.Symlink(exe, link); err != nil {
			t.Fatal(err)
		}
	}
	return append(os.Environ(), "PARLEY_TEST_EXEC_CLI=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestDocsCommands runs every shell block of the README and docs/ against
// a fresh server per file, started as the tour starts it (--signup-rate 0,
// data in ./data), and lists the blocks it skipped with their reasons.
func TestDocsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server per document")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	ran, skipped := 0, 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseDocBlocks(file, data)
		if err != nil {
			t.Error(err)
			continue
		}
		var run []docBlock
		for _, b := range blocks {
			if b.skip != "" {
				skipped++
				t.Logf("skipped %s:%d: %s", b.file, b.line, b.skip)
				continue
			}
			run = append(run, b)
		}
		if len(run) == 0 {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir := t.TempDir()
			p := startServeProcess(t, "--data", filepath.Join(dir, "data"), "--signup-rate", "0")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := runDocBlocks(ctx, dir, p.addr, run, docEnv(t, dir)); err != nil {
				t.Error(err)
			}
		})
		ran += len(run)
	}
	t.Logf("%d shell blocks run, %d skipped", ran, skipped)
	if ran == 0 {
		t.Error("no shell block ran")
	}
}

// TestDocsRunnerFails: a block that fails fails the run and is named,
// whether a command exits non-zero or curl gets an HTTP error status;
// the blocks share one shell.
func TestDocsRunnerFails(t *testing.T) {
	md := "# t\n\n```sh\nX=1\n```\n\n<!-- docs-test: skip (not here) -->\n```sh\nfalse\n```\n\n```console\n$ test \"$X\" = 1\nsome output\n```\n\n```sh\n%s\n```\n"
	p := startServeProcess(t, "--data", t.TempDir())
	for _, tc := range []struct {
		name, cmd string
		fails     bool
	}{
		{"ok", "curl -s http://127.0.0.1:8080/healthz", false},
		{"exit status", "test \"$X\" = 2", true},
		{"http status", "curl -s http://127.0.0.1:8080/api/no-such-route", true},
		{"pipeline", "false | cat", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := parseDocBlocks("t.md", []byte(fmt.Sprintf(md, tc.cmd)))
			if err != nil {
				t.Fatal(err)
			}
			var run []docBlock
			for _, b := range blocks {
				if b.skip == "" {
					run = append(run, b)
				}
			}
			if len(blocks) != 4 || len(run) != 3 {
				t.Fatalf("parsed %d blocks, %d to run; want 4 and 3", len(blocks), len(run))
			}
			err = runDocBlocks(context.Background(), t.TempDir(), p.addr, run, os.Environ())
			if got := err != nil; got != tc.fails {
				t.Fatalf("run with %q: error %v, want failure %v", tc.cmd, err, tc.fails)
			}
			if tc.fails && !strings.Contains(err.Error(), "t.md:17:") {
				t.Errorf("error does not name the failed block t.md:17:\n%v", err)
			}
		})
	}
}

// TestDocsMarks: a docs-test mark that is malformed or not right above a
// shell block is refused, so that no block is silenced by a typo.
func TestDocsMarks(t *testing.T) {
	for name, md := range map[string]string{
		"malformed":        "<!-- docs-test: skipp (x) -->\n```sh\ntrue\n```\n",
		"no reason":        "<!-- docs-test: skip -->\n```sh\ntrue\n```\n",
		"not above":        "<!-- docs-test: skip (x) -->\n\n```sh\ntrue\n```\n",
		"above js":         "<!-- docs-test: skip (x) -->\n```js\nx()\n```\n",
		"at the end":       "text\n<!-- docs-test: skip (x) -->\n",
		"fence not closed": "```sh\ntrue\n",
	} {
		if _, err := parseDocBlocks("t.md", []byte(md)); err == nil {
			t.Errorf("%s: parsed without error:\n%s", name, md)
		}
	}
}

// TestDocsConfigurationTable: every flag of parley serve has its row in
// docs/configuration.md's table, and every row names a flag.
func TestDocsConfigurationTable(t *testing.T) {
	data, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\|").FindAllStringSubmatch(string(data), -1) {
		rows[m[1]] = true
	}
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.flags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		switch {
		case f.Name == "config": // the file itself, in the prose above the table
			if !strings.Contains(string(data), "`--config FILE`") {
				t.Error("docs/configuration.md does not describe --config FILE")
			}
		case !rows[f.Name]:
			t.Errorf("docs/configuration.md has no row for --%s", f.Name)
		}
		delete(rows, f.Name)
	})
	for name := range rows {
		t.Errorf("docs/configuration.md has a row for --%s, which parley serve does not take", name)
	}
}

var (
	mdLinkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeadingRE = regexp.MustCompile(`^#{1,6} (.+)$`)
	slugDropRE  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// mdAnchors are the anchors of a markdown file's headings, as GitHub
// makes them: lower case, punctuation dropped, spaces made hyphens.
func mdAnchors(data []byte) map[string]bool {
	anchors := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	inFence := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if m := mdHeadingRE.FindStringSubmatch(line); m != nil && !inFence {
			slug := strings.ReplaceAll(slugDropRE.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
			anchors[slug] = true
		}
	}
	return anchors
}

// TestDocsLinks: every relative link of the README and docs/ names a file
// of the repository, and every #anchor a heading of its file.
func TestDocsLinks(t *testing.T) {
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLinkRE.FindAllStringSubmatch(string(data), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), path)
			}
			info, err := os.Stat(target)
			if err != nil {
				t.Errorf("%s: link %s: %v", file, link, err)
				continue
			}
			if anchor == "" || info.IsDir() {
				continue
			}
			td, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			if !mdAnchors(td)[anchor] {
				t.Errorf("%s: link %s: no heading with that anchor in %s", file, link, target)
			}
		}
	}
}

// TestDocsTestCommand: the README's test command is the one .ci/run runs
// (there with the race detector, a count and a timeout).
func TestDocsTestCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^go test \./\.\.\.\s`).Match(readme) {
		t.Error("README.md has no line starting with the test command go test ./...")
	}
	if !regexp.MustCompile(`(?m)^go test -race( -[a-z]+(=\S+| [^-\s]\S*)?)* \./\.\.\.(\s|$)`).Match(ci) {
		t.Error(".ci/run does not run the README's go test ./... (with -race)")
	}
}

// TestDocsREADMEShort: the README stays one a newcomer finishes (issue
// 28: at most 250 lines); reference text belongs in docs/.
func TestDocsREADMEShort(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > 250 {
		t.Errorf("README.md has %d lines, want at most 250: move reference text into docs/", n)
	}
}
