package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The markers around the headline table in BENCHMARKS.md: the lines
// between them are the table's, everything else the file's own.
const (
	beginMarker = "<!-- headline:begin -->"
	endMarker   = "<!-- headline:end -->"
)

// loadSummaries reads every *.summary.json under dirs. Of two summaries
// of one name the newer (by date) wins, so that a results directory can
// hold an old full run and a partial rerun. Quick ones are left out
// unless quick, and counted in skipped.
func loadSummaries(dirs []string, quick bool) (sums []Summary, skipped int, err error) {
	byName := map[string]Summary{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".summary.json") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var s Summary
			if err := json.Unmarshal(b, &s); err != nil {
				return fmt.Errorf("%s: %v: remove it or rerun its script", path, err)
			}
			if !validName(s.Name) || len(s.Rounds) == 0 {
				return fmt.Errorf("%s: no name or no rounds: remove it or rerun its script", path)
			}
			if s.Quick && !quick {
				skipped++
				return nil
			}
			if old, ok := byName[s.Name]; !ok || s.Date > old.Date {
				byName[s.Name] = s
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	for _, s := range byName {
		sums = append(sums, s)
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i].Name < sums[j].Name })
	return sums, skipped, nil
}

// cell escapes what would break a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// code is s as inline code in a table cell ("" stays empty).
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + cell(s) + "`"
}

// shortDate is an RFC 3339 date as "2006-01-02 15:04" (UTC), or as given
// when it does not parse.
func shortDate(d string) string {
	t, err := time.Parse(time.RFC3339, d)
	if err != nil {
		return d
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// renderTable returns the headline table's lines (without the markers),
// each ending in a newline.
func renderTable(sums []Summary) string {
	var b strings.Builder
	b.WriteString("| comparison | ratio | median | spread (min-max) | rounds | goal | date (UTC) | build | command |\n")
	b.WriteString("|---|---|---:|---|---:|---|---|---|---|\n")
	if len(sums) == 0 {
		b.WriteString("| no pinned run yet | | | | | | | | `scripts/bench-all.sh` |\n")
		return b.String()
	}
	for _, s := range sums {
		title := s.Title
		if s.Note != "" {
			title += " (" + s.Note + ")"
		}
		if strings.HasPrefix(s.Pinned, "not pinned") {
			title += " (not pinned)"
		}
		if s.Quick {
			title += " (QUICK: not a measurement)"
		}
		rounds := make([]string, len(s.Rounds))
		for i, r := range s.Rounds {
			rounds[i] = ratio(r.Ratio)
		}
		fmt.Fprintf(&b, "| %s | %s | **%s** | %s-%s (%s) | %s | %s | %s | %s | %s |\n",
			cell(title), cell(s.Metric+", "+s.A+" / "+s.B), ratio(s.Median), ratio(s.Min), ratio(s.Max),
			strings.Join(rounds, ", "), strconv.Itoa(len(s.Rounds)), cell(s.Goal), shortDate(s.Date),
			code(s.Commit), code(s.Command))
	}
	return b.String()
}

// replaceBetween returns doc with the lines between its begin and end
// markers replaced by table; the marker lines and everything outside them
// are kept byte for byte. Each marker must be on a line of its own,
// exactly once, begin before end.
func replaceBetween(doc []byte, table string) ([]byte, error) {
	begin, end := -1, -1 // offsets just past the begin line, and of the end line
	off := 0
	for _, line := range bytes.SplitAfter(doc, []byte("\n")) {
		switch strings.TrimSpace(string(line)) {
		case beginMarker:
			if begin >= 0 {
				return nil, fmt.Errorf("%s appears twice: keep one pair of markers", beginMarker)
			}
			begin = off + len(line)
		case endMarker:
			if end >= 0 {
				return nil, fmt.Errorf("%s appears twice: keep one pair of markers", endMarker)
			}
			end = off
		}
		off += len(line)
	}
	switch {
	case begin < 0 || end < 0:
		return nil, fmt.Errorf("no %s … %s pair of lines: put both, each on a line of its own, where the table goes", beginMarker, endMarker)
	case end < begin:
		return nil, fmt.Errorf("%s comes before %s: swap them", endMarker, beginMarker)
	case begin > 0 && doc[begin-1] != '\n':
		return nil, fmt.Errorf("%s ends the file: put %s on the line after it", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(doc[:begin])
	out.WriteString(table)
	out.Write(doc[end:])
	return out.Bytes(), nil
}

// maxLines is the house limit of BENCHMARKS.md's length; the rewrite
// warns past it (the table grows with the comparisons run).
const maxLines = 250

// rewriteFile replaces the headline table of the file at path, through a
// temporary file beside it so that a failure leaves the file as it was,
// and returns the file's number of lines after.
func rewriteFile(path, table string) (int, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	out, err := replaceBetween(doc, table)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	tmp := path + ".benchtable.tmp"
	if err := os.WriteFile(tmp, out, fi.Mode().Perm()); err != nil {
		return 0, err
	}
	return bytes.Count(out, []byte("\n")), os.Rename(tmp, path)
}
