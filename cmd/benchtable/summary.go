package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Round is one round of a comparison: the two sides' figures and A/B.
type Round struct {
	Round int     `json:"round"`
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Ratio float64 `json:"ratio"`
}

// Summary is one comparison's result over its rounds, the unit the
// scripts save and the headline table is made of.
type Summary struct {
	Name    string  `json:"name"`           // unique key and file name: centrifugo-group-08x-p99
	Title   string  `json:"title"`          // what was compared: "fan-out, seed 002 at 8×"
	Metric  string  `json:"metric"`         // the figure: "p99 (ms)"
	A       string  `json:"a"`              // the ratio's numerator side: Parley
	B       string  `json:"b"`              // its denominator side: Centrifugo
	Goal    string  `json:"goal,omitempty"` // the ratio's goal: "≤ 1.00"
	Note    string  `json:"note,omitempty"` // anything else a reader needs: "0 lost"
	Median  float64 `json:"median"`         // median of the rounds' ratios
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Rounds  []Round `json:"rounds"`
	Pinned  string  `json:"pinned,omitempty"` // what ran on which core
	Date    string  `json:"date"`             // end of the run, RFC 3339, UTC
	Commit  string  `json:"commit,omitempty"` // the build measured
	Command string  `json:"command,omitempty"`
	Quick   bool    `json:"quick,omitempty"` // QUICK=1: a try of the script, not a measurement
}

// parseRounds reads "ROUND A B" lines; blank lines and '#' comments are
// skipped. A round whose B is 0 has no ratio and is refused, as is one
// that is not three numbers.
func parseRounds(r io.Reader) ([]Round, error) {
	var rounds []Round
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %q: want three fields, ROUND A B", n, sc.Text())
		}
		round, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: round %q is not a whole number", n, f[0])
		}
		var ab [2]float64
		for i, s := range f[1:] {
			v, err := strconv.ParseFloat(strings.TrimSuffix(s, ","), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("line %d: figure %q is not a number: did the run of round %d fail? (its report is beside the rounds file)", n, s, round)
			}
			ab[i] = v
		}
		if ab[1] == 0 {
			return nil, fmt.Errorf("line %d: round %d's second figure is 0: the ratio is undefined (did that side's run fail?)", n, round)
		}
		rounds = append(rounds, Round{Round: round, A: ab[0], B: ab[1], Ratio: ab[0] / ab[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rounds) == 0 {
		return nil, errors.New("no rounds: the file has no \"ROUND A B\" line")
	}
	return rounds, nil
}

// median returns the median of vs (the mean of the middle two for an even
// count), and its min and max. vs must not be empty; it is not changed.
func median(vs []float64) (med, lo, hi float64) {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		med = s[n/2]
	} else {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// summarize fills s's rounds, median and spread from rounds.
func (s *Summary) summarize(rounds []Round) {
	s.Rounds = rounds
	ratios := make([]float64, len(rounds))
	for i, r := range rounds {
		ratios[i] = r.Ratio
	}
	s.Median, s.Min, s.Max = median(ratios)
}

// ratio formats a ratio with 3 significant digits at most 2 decimals
// above 10: 0.943, 1.07, 15.8.
func ratio(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// figure formats a measured figure compactly: 24.13, 250000.
func figure(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// writeHuman prints s for people: a headline, then one line per round.
func (s *Summary) writeHuman(w io.Writer) {
	goal := ""
	if s.Goal != "" {
		goal = ", goal " + s.Goal
	}
	quick := ""
	if s.Quick {
		quick = " (QUICK: a try, not a measurement)"
	}
	fmt.Fprintf(w, "== %s: %s, %s, %s / %s: median %s (%s-%s) over %d rounds%s%s\n",
		s.Name, s.Title, s.Metric, s.A, s.B, ratio(s.Median), ratio(s.Min), ratio(s.Max), len(s.Rounds), goal, quick)
	for _, r := range s.Rounds {
		fmt.Fprintf(w, "   round %d: %s %s, %s %s, ratio %s\n", r.Round, s.A, figure(r.A), s.B, figure(r.B), ratio(r.Ratio))
	}
	if s.Note != "" {
		fmt.Fprintf(w, "   %s\n", s.Note)
	}
}

// save writes s as one JSON line to dir/NAME.summary.json, replacing the
// file a former run of the same comparison left.
func (s *Summary) save(dir string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // one line, ending in a newline
	enc.SetEscapeHTML(false)   // commands keep their & and <
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	path := filepath.Join(dir, s.Name+".summary.json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// validName reports whether a comparison's name is usable as a file name
// and a stable sort key.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// now is the clock of the summaries' dates; tests replace it.
var now = func() time.Time { return time.Now().UTC() }
