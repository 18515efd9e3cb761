package sqlite

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/parleytest"
)

// BenchmarkSearchShapes compares two shapes of the full-text index on the
// messages of parley bench search (1,000 rooms of -shapes-history messages,
// about 60 bytes of words drawn uniformly from 5,000; written in
// transactions of 60 messages, as group commits write them), reading only
// the index: which messages of a user's 20 rooms hold a random word.
//
//   - shape=word is the index as it is (migration 0003): one term per word,
//     its postings over every room, filtered to the user's rooms by key.
//   - shape=room indexes each word as a term of its room ("word_num",
//     tokenised in Go) and asks for the user's 20 rooms' terms, ORed: it
//     reads only the postings of those rooms, but looks up 20 terms.
//
// Each runs on the index as written (as many FTS5 segments as its merges
// left) and then after 'optimize' (one segment): FTS5 looks a term up in
// every segment, so the cost of shape=room grows with terms × segments and
// that of shape=word with the word's postings (docs/perf-log.md).
func BenchmarkSearchShapes(b *testing.B) {
	const nRooms, userRooms, perTx = 1000, 20, 60
	history := benchShapesHistory
	s, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "shapes.db"), Sync: SyncOff})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, stmt := range []string{
		`CREATE VIRTUAL TABLE shape_word USING fts5 (body, content = '', tokenize = 'unicode61 remove_diacritics 0', detail = none, columnsize = 0)`,
		`CREATE VIRTUAL TABLE shape_room USING fts5 (terms, content = '', tokenize = "ascii tokenchars _", detail = none, columnsize = 0)`,
	} {
		if _, err := s.wdb.Exec(stmt); err != nil {
			b.Fatal(err)
		}
	}
	total := nRooms * history
	for start := 0; start < total; start += perTx {
		tx, err := s.wdb.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for k := start; k < min(start+perTx, total); k++ {
			i, j := k%nRooms, k/nRooms
			num, key := int64(i+1), int64(i+1)<<36|int64(j+1)
			body := parleytest.SearchBody(i, j)
			var terms strings.Builder
			for n, w := range strings.Fields(body) {
				if n > 0 {
					terms.WriteByte(' ')
				}
				terms.WriteString(w + "_" + strconv.FormatInt(num, 10))
			}
			if _, err := tx.Exec(`INSERT INTO shape_word (rowid, body) VALUES (?, ?)`, key, body); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(`INSERT INTO shape_room (rowid, terms) VALUES (?, ?)`, key, terms.String()); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// The user of parley bench search: rooms i, i+100, ... and i-1, i+99, ...
	nums := make([]int64, 0, userRooms)
	for k := range userRooms / 2 {
		nums = append(nums, int64(7+100*k+1), int64(6+100*k+1))
	}
	var in, or strings.Builder
	for k, n := range nums {
		if k > 0 {
			in.WriteByte(',')
		}
		in.WriteString(strconv.FormatInt(n, 10))
	}
	shapes := []struct {
		name, table, query string
		match              func(w string) string
	}{
		{"word", "shape_word", `SELECT count(*) FROM shape_word WHERE shape_word MATCH ? AND (rowid >> 36) IN (` + in.String() + `)`,
			func(w string) string { return `"` + w + `"` }},
		{"room", "shape_room", `SELECT count(*) FROM shape_room WHERE shape_room MATCH ?`,
			func(w string) string {
				or.Reset()
				for k, n := range nums {
					if k > 0 {
						or.WriteString(" OR ")
					}
					or.WriteString(`"` + w + "_" + strconv.FormatInt(n, 10) + `"`)
				}
				return or.String()
			}},
	}
	for _, state := range []string{"as-written", "optimized"} {
		for _, sh := range shapes {
			if state == "optimized" {
				if _, err := s.wdb.Exec(`INSERT INTO ` + sh.table + ` (` + sh.table + `) VALUES ('optimize')`); err != nil {
					b.Fatal(err)
				}
			}
			var segments int
			if err := s.rdb.QueryRow(`SELECT count(DISTINCT segid) FROM ` + sh.table + `_idx`).Scan(&segments); err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("shape=%s/index=%s", sh.name, state), func(b *testing.B) {
				stmt, err := s.rdb.Prepare(sh.query)
				if err != nil {
					b.Fatal(err)
				}
				defer stmt.Close()
				hits := 0
				cpu0 := threadCPU()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var n int
					if err := stmt.QueryRow(sh.match(parleytest.SearchWord(rand.IntN(parleytest.SearchVocabulary)))).Scan(&n); err != nil {
						b.Fatal(err)
					}
					hits += n
				}
				b.StopTimer()
				b.ReportMetric((threadCPU()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(hits)/float64(b.N), "hits/op")
				b.ReportMetric(float64(segments), "segments")
			})
		}
	}
}

// benchShapesHistory is the number of messages a room of
// BenchmarkSearchShapes.
var benchShapesHistory = 100

func init() {
	flag.IntVar(&benchShapesHistory, "shapes-history", benchShapesHistory, "messages a room of BenchmarkSearchShapes")
}

// threadCPU is the CPU time the process has used (user and system).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
