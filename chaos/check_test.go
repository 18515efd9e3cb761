package chaos

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// row is one stored message.
type row struct {
	seq       int64
	cid, body string
}

// pgRows reads a room's messages from PostgreSQL, in seq order.
func pgRows(t *testing.T, url, roomID string) []row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to the store: %v", err)
	}
	defer conn.Close(ctx)
	rs, err := conn.Query(ctx, "SELECT seq, client_id, body FROM messages WHERE room_id = $1 ORDER BY seq", roomID)
	if err != nil {
		t.Fatalf("read messages: %v", err)
	}
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.seq, &r.cid, &r.body); err != nil {
			t.Fatalf("scan: %v", err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("read messages: %v", err)
	}
	return out
}

// restRows reads a room's messages over REST (the SQLite cases, whose
// store only the node opens).
func restRows(t *testing.T, addr, token, roomID string) []row {
	t.Helper()
	ms, err := restHistory(addr, token, roomID)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]row, len(ms))
	for i, m := range ms {
		out[i] = row{seq: m.Seq, cid: m.ClientID, body: m.Body}
	}
	return out
}

// storeVerdict compares the stored messages with the senders' ledger.
type storeVerdict struct {
	rows      int
	receipted int
	lost      int // receipted, not stored (or stored under another seq)
	dups      int // a client-id stored twice, or a row no sender wrote
	holes     int // seqs missing from 1..last
	unanswer  int // stored, never receipted (committed while unanswered)
	why       []string
}

func checkStore(rows []row, recs []sendRec) storeVerdict {
	var v storeVerdict
	v.rows = len(rows)
	byCID := map[string][]row{}
	var prev int64
	for _, r := range rows {
		if r.seq != prev+1 {
			v.holes += int(r.seq - prev - 1)
			v.why = append(v.why, fmt.Sprintf("seq %d follows %d", r.seq, prev))
		}
		prev = r.seq
		if head, _, _ := strings.Cut(r.body, " "); head != r.cid {
			v.dups++
			v.why = append(v.why, fmt.Sprintf("seq %d: body of %q stored with client-id %q", r.seq, head, r.cid))
		}
		byCID[r.cid] = append(byCID[r.cid], r)
	}
	sent := map[string]sendRec{}
	for _, s := range recs {
		sent[s.cid] = s
		stored := byCID[s.cid]
		if len(stored) > 1 {
			v.dups += len(stored) - 1
			v.why = append(v.why, fmt.Sprintf("client-id %s stored %d times", s.cid, len(stored)))
		}
		if s.receipt.IsZero() {
			if len(stored) > 0 {
				v.unanswer++
			}
			continue
		}
		v.receipted++
		switch {
		case len(stored) == 0:
			v.lost++
			v.why = append(v.why, fmt.Sprintf("%s receipted as seq %d, not stored", s.cid, s.seq))
		case stored[0].seq != s.seq:
			v.lost++
			v.why = append(v.why, fmt.Sprintf("%s receipted as seq %d, stored as %d", s.cid, s.seq, stored[0].seq))
		}
	}
	for cid, rs := range byCID {
		if _, ok := sent[cid]; !ok {
			v.dups += len(rs)
			v.why = append(v.why, fmt.Sprintf("client-id %q stored, never sent", cid))
		}
	}
	return v
}

// assertStore fails t for every loss, duplicate or hole.
func assertStore(t *testing.T, v storeVerdict) {
	t.Helper()
	if v.receipted == 0 {
		t.Errorf("no message was receipted")
	}
	if v.lost > 0 || v.dups > 0 || v.holes > 0 {
		why := v.why
		if len(why) > 10 {
			why = append(why[:10:10], fmt.Sprintf("and %d more", len(v.why)-10))
		}
		t.Errorf("store: %d receipted lost, %d duplicates, %d holes in %d rows: %s",
			v.lost, v.dups, v.holes, v.rows, strings.Join(why, "; "))
	}
}

// assertSubscribers fails t for each subscriber that did not read 1..n
// once in order; it returns how many failed.
func assertSubscribers(t *testing.T, subs []*subscriber, n int64) int {
	t.Helper()
	bad := 0
	for _, s := range subs {
		if why := s.violations(n); why != "" {
			bad++
			if bad <= 10 {
				t.Errorf("subscriber %s: %s", s.name, why)
			}
		}
	}
	if bad > 10 {
		t.Errorf("and %d more subscribers", bad-10)
	}
	return bad
}

// result is one line of the reliability table.
type result struct {
	name      string
	v         storeVerdict
	subs      int
	subFaults int
	recovery  string
	notes     string
}

// report logs r; with PARLEY_CHAOS_RESULTS set, it also appends it as a
// Markdown table row to that file.
func report(t *testing.T, r result) {
	t.Helper()
	line := fmt.Sprintf("| %s | %d | %d | %d | %d | %d/%d | %s | %s |",
		r.name, r.v.receipted, r.v.lost, r.v.dups, r.v.holes, r.subs-r.subFaults, r.subs, r.recovery, r.notes)
	t.Logf("chaos result: %s", line)
	if p := os.Getenv("PARLEY_CHAOS_RESULTS"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// ms formats a duration rounded to the millisecond.
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// since formats a duration that is -1 when the event never happened.
func since(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return ms(d)
}
