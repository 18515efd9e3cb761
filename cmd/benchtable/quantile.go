package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// histQuantile returns the q-quantile of a Prometheus histogram in the
// text exposition r holds (the name's _bucket lines, summed over their
// labels), as the upper bound of the bucket it falls in (the largest
// finite bound when it falls past it: a lower bound then), and false when
// the histogram is missing or has no observations.
func histQuantile(r io.Reader, name string, q float64) (float64, bool, error) {
	counts := map[float64]float64{} // le → cumulative count
	prefix := name + "_bucket{"
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		labels, value, ok := strings.Cut(line[len(prefix):], "} ")
		if !ok {
			return 0, false, fmt.Errorf("%q: not a sample line", line)
		}
		le := math.NaN()
		for _, l := range strings.Split(labels, ",") {
			if v, ok := strings.CutPrefix(l, `le="`); ok {
				v = strings.TrimSuffix(v, `"`)
				if v == "+Inf" {
					le = math.Inf(1)
				} else if f, err := strconv.ParseFloat(v, 64); err == nil {
					le = f
				}
			}
		}
		c, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if math.IsNaN(le) || err != nil {
			return 0, false, fmt.Errorf("%q: no le label or no count", line)
		}
		counts[le] += c
	}
	if err := sc.Err(); err != nil {
		return 0, false, err
	}
	les := make([]float64, 0, len(counts))
	for le := range counts {
		les = append(les, le)
	}
	sort.Float64s(les)
	if len(les) == 0 || counts[les[len(les)-1]] == 0 {
		return 0, false, nil
	}
	total := counts[les[len(les)-1]]
	for i, le := range les {
		if counts[le] >= q*total {
			if math.IsInf(le, 1) && i > 0 {
				le = les[i-1]
			}
			return le, true, nil
		}
	}
	return les[len(les)-1], true, nil
}
