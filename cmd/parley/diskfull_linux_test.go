package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/stomp"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and returns
// it; cleanup unmounts it, after whatever was started later has stopped.
// It skips the test, saying why, where it cannot mount: mounting needs
// root (CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs for the data directory (CI runs it as root)")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("mount a tmpfs on %s: %v (needs CAP_SYS_ADMIN)", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// fill writes a file in dir until the filesystem has no room left.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		_, err := f.Write(chunk)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatalf("fill %s: %v", path, err)
		}
	}
	// The last pages a partial write may have left.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return path
}

// restSend posts a message and returns the response's status, its
// Retry-After, the message (201, 200) or the error (otherwise).
func restSend(t *testing.T, c *client, roomID, body, clientID string) (int, string, message, apiError) {
	t.Helper()
	req, err := http.NewRequest("POST", c.base+"/api/rooms/"+roomID+"/messages", jsonReader(map[string]string{"body": body, "client_id": clientID}))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	checkAPIDoc(t, req, resp, data)
	var m message
	var e apiError
	if resp.StatusCode < 300 {
		err = json.Unmarshal(data, &m)
	} else {
		err = json.Unmarshal(data, &e)
	}
	if err != nil {
		t.Fatalf("send: status %d, body %q: %v", resp.StatusCode, data, err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), m, e
}

// getText returns the status and body of GET url.
func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// refusedCount returns parley_store_full_total{writer="w"}, the writes
// of w ("request": the clients', "indexer": the search indexer's rounds)
// a full storage refused, from a /metrics text.
func refusedCount(metrics, w string) float64 {
	return metricValue(metrics, `parley_store_full_total{writer="`+w+`"}`)
}

// metricsOf returns the /metrics text of the server at addr.
func metricsOf(t *testing.T, addr string) string {
	t.Helper()
	_, text := getText(t, "http://"+addr+"/metrics")
	return text
}

// metricValue returns the value of the sample name (no labels) in a
// Prometheus text exposition, -1 if absent.
func metricValue(text, name string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// allMessages pages through a room's history, oldest first.
func allMessages(t *testing.T, c *client, roomID string) []message {
	t.Helper()
	var all []message
	for {
		var page struct {
			Messages []message `json:"messages"`
		}
		path := fmt.Sprintf("/api/rooms/%s/messages?after=%d&limit=100", roomID, int64(len(all)))
		if len(all) > 0 {
			path = fmt.Sprintf("/api/rooms/%s/messages?after=%d&limit=100", roomID, all[len(all)-1].Seq)
		}
		if st := c.do("GET", path, nil, &page); st != http.StatusOK {
			t.Fatalf("GET %s: %d", path, st)
		}
		if len(page.Messages) == 0 {
			return all
		}
		all = append(all, page.Messages...)
	}
}

// TestDiskFullEndToEnd runs `parley serve` with its data directory on a
// small tmpfs and fills it: REST sends get 503 unavailable with
// Retry-After, saying the storage is full; a STOMP SEND with a receipt
// gets ERROR code:unavailable; /readyz names it; the metrics count the
// refusals; the log says it once, not once a send; reads are served. Once
// the filler is deleted, a refused client-id is stored at the next seq,
// the end is logged once (at a write 5 s after the last refusal), and the
// history has every accepted message once, with no hole.
func TestDiskFullEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	small := mountTmpfs(t, 8<<20)
	data := filepath.Join(small, "data")
	p := startServeProcess(t, "--data", data, "--sync", "full", "--stomp-addr", "127.0.0.1:0", "--rest-send-rate", "0")
	alice, _ := mustSignUp(t, p.addr, "alice")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "full"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	var accepted []message
	for i := range 3 {
		st, _, m, e := restSend(t, alice, r.ID, "before", fmt.Sprintf("b%d", i))
		if st != http.StatusCreated {
			t.Fatalf("send before the disk is full: %d %+v", st, e)
		}
		accepted = append(accepted, m)
	}

	filler := fill(t, small)
	// The WAL may have room left in its own file, and a checkpoint that
	// copies all of it lets SQLite write the WAL from its start again: so
	// a full disk refuses some writes and takes others. Send until refused,
	// keeping what was accepted.
	body := strings.Repeat("z", 4000)
	sent := 0
	sendUntilRefused := func() string {
		t.Helper()
		for ; sent < 3000; sent++ {
			id := fmt.Sprintf("f%d", sent)
			st, retry, m, e := restSend(t, alice, r.ID, body, id)
			switch st {
			case http.StatusCreated:
				accepted = append(accepted, m)
			case http.StatusServiceUnavailable:
				if e.Error.Code != "unavailable" || !strings.Contains(e.Error.Message, "storage is full") || !strings.Contains(e.Error.Message, "same client-id") {
					t.Fatalf("send on a full disk: %+v, want unavailable saying the storage is full, to send again with the same client-id", e)
				}
				if retry == "" {
					t.Errorf("send on a full disk: 503 without Retry-After")
				}
				sent++
				return id
			default:
				t.Fatalf("send on a full disk: %d %+v, want 201 or 503", st, e)
			}
		}
		t.Fatalf("%d sends of 4 KB on a full 8 MiB tmpfs, and %v of them refused", sent, refusedCount(metricsOf(t, p.addr), "request"))
		return ""
	}
	refusedID := sendUntilRefused()
	t.Logf("%d sends accepted after the filler, until %s was refused", len(accepted)-3, refusedID)
	const more = 50
	for range more {
		refusedID = sendUntilRefused()
	}
	t.Logf("%d sends in all after the filler, %d accepted", sent, len(accepted)-3)
	// A STOMP SEND with a receipt: a RECEIPT while the WAL has room, an
	// ERROR code:unavailable (which ends the session) once it has none.
	sc := dialStompAt(t, "tcp", p.stompAddr, alice.token)
	for i := 0; ; i++ {
		if i == 3000 {
			t.Fatalf("3,000 STOMP sends of 4 KB on a full 8 MiB tmpfs, none refused")
		}
		sc.send(fmt.Sprintf("SEND\ndestination:/app/rooms.%s\nclient-id:s%d\nreceipt:r%d\n\n%s\x00", r.ID, i, i, body))
		f := sc.read()
		if f.Command == stomp.Receipt {
			seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
			accepted = append(accepted, message{ID: string(f.Get("message-id")), Seq: seq})
			continue
		}
		if f.Command != stomp.Error || string(f.Get("code")) != "unavailable" || string(f.Get("receipt-id")) != fmt.Sprint("r", i) {
			t.Fatalf("STOMP SEND on a full disk: %s %q, want RECEIPT or ERROR code:unavailable receipt-id:r%d", f.Command, f.Body, i)
		}
		if !strings.Contains(string(f.Body), "storage is full") {
			t.Errorf("STOMP ERROR on a full disk: body %q, want it to say the storage is full", f.Body)
		}
		break
	}

	if st, text := getText(t, "http://"+p.addr+"/readyz"); st != http.StatusOK || !strings.Contains(text, "store: degraded: storage full") {
		t.Errorf("/readyz on a full disk = %d %q, want 200 naming the full storage", st, text)
	}
	_, metrics := getText(t, "http://"+p.addr+"/metrics")
	// Every refused send counts, as a request; each round of the search
	// indexer (sqlite/indexer.go) that the full disk refused meanwhile (a
	// write like the others, retried after a pause) counts apart.
	if got, want := refusedCount(metrics, "request"), float64(1+more+1); got != want {
		t.Errorf("parley_store_full_total{writer=\"request\"} = %v, want %v (every refused send)", got, want)
	}
	if req, idx := refusedCount(metrics, "request"), refusedCount(metrics, "indexer"); idx < 0 || req+idx < float64(1+more+1) {
		t.Errorf("parley_store_full_total = %v requests and %v indexer rounds, want both shown, at least %v in all", req, idx, 1+more+1)
	} else {
		t.Logf("the full disk refused %v rounds of the search indexer", idx)
	}
	if got := metricValue(metrics, "parley_store_full"); got != 1 {
		t.Errorf("parley_store_full = %v on a full disk, want 1", got)
	}
	if got := allMessages(t, alice, r.ID); len(got) != len(accepted) {
		t.Errorf("history on a full disk: %d messages, want %d", len(got), len(accepted))
	}
	if n := strings.Count(p.lines(), "storage full; refusing writes"); n != 1 {
		t.Errorf("%d lines saying the storage is full, want 1:\n%s", n, p.lines())
	}
	if n := strings.Count(p.lines(), "http error"); n != 0 {
		t.Errorf("%d http error lines on a full disk, want none:\n%s", n, p.lines())
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	st, _, m, e := restSend(t, alice, r.ID, body, refusedID)
	if st != http.StatusCreated {
		t.Fatalf("send again after space is freed: %d %+v, want 201", st, e)
	}
	if want := accepted[len(accepted)-1].Seq + 1; m.Seq != want {
		t.Errorf("send after space is freed: seq %d, want %d (the next, no hole)", m.Seq, want)
	}
	accepted = append(accepted, m)
	// The state ends at the first write committed 5 s (the store's quiet
	// time) after the last refusal: send once a second until it is logged.
	roomAgain := regexp.MustCompile(`storage has room again`)
	for i := 0; ; i++ {
		if _, ok := p.waitLog(roomAgain, time.Second); ok {
			break
		}
		if i == 30 {
			t.Fatalf("no line saying the storage has room again after %d sends in 30 s:\n%s", i, p.lines())
		}
		st, _, m, e := restSend(t, alice, r.ID, "after", fmt.Sprintf("a%d", i))
		if st != http.StatusCreated {
			t.Fatalf("send after space is freed: %d %+v, want 201", st, e)
		}
		accepted = append(accepted, m)
	}
	if st, _, m, _ := restSend(t, alice, r.ID, "before", "b0"); st != http.StatusOK || m.ID != accepted[0].ID {
		t.Errorf("repeat of b0 after the full disk = %d %v, want 200 and the original %v", st, m.ID, accepted[0].ID)
	}
	if st, text := getText(t, "http://"+p.addr+"/readyz"); st != http.StatusOK || !strings.Contains(text, "store: ok") {
		t.Errorf("/readyz after space is freed = %d %q, want store: ok", st, text)
	}
	got := allMessages(t, alice, r.ID)
	for i, gm := range got {
		if gm.Seq != int64(i+1) || i >= len(accepted) || gm.ID != accepted[i].ID {
			t.Fatalf("history after the full disk: message %d is seq %d (%s), want seq %d, each accepted message once", i, gm.Seq, gm.ID, i+1)
		}
	}
	if len(got) != len(accepted) {
		t.Errorf("history after the full disk: %d messages, want %d", len(got), len(accepted))
	}
	if n := strings.Count(p.lines(), "storage full; refusing writes") + strings.Count(p.lines(), "storage has room again"); n != 2 {
		t.Errorf("%d lines about the full storage, want 2 (its start and its end):\n%s", n, p.lines())
	}
}
