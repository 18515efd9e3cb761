package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"parley/parleytest"
)

// startServerProcess runs this test binary as `parley serve` on dataDir,
// with the flags extra, and returns the process and its address.
func startServerProcess(t *testing.T, dataDir string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--addr", "127.0.0.1:0", "--data", dataDir, "--sync", "full"}, extra...)...)
	cmd.Env = append(os.Environ(), "PARLEY_TEST_EXEC_SERVE=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addrc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`parley serving.* addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case addr := <-addrc:
		return cmd, addr
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start in 30 s")
		return nil, ""
	}
}

// TestDurabilityAfterKill kills the server with SIGKILL while sends are in
// flight, restarts it on the same data, and checks that every message that
// got a 201 is there, with its seq, in a gapless order.
func TestDurabilityAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	srv, addr := startServerProcess(t, dir)
	c, _ := mustSignUp(t, addr, "writer")
	var r room
	if st := c.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "durable"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}

	const senders = 16
	var (
		mu    sync.Mutex
		acked = map[int64]string{} // seq -> body of every 201
		wg    sync.WaitGroup
	)
	tr := &http.Transport{MaxIdleConnsPerHost: senders}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for i := 0; i < senders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 2000; j++ {
				body := fmt.Sprintf("sender %d message %d", i, j)
				m, ok := postMessage(hc, addr, c.token, r.ID, body)
				if !ok {
					return // the server is gone
				}
				mu.Lock()
				acked[m.Seq] = body
				mu.Unlock()
			}
		}()
	}
	// Kill once a good number of messages are acknowledged.
	parleytest.Poll(20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 500
	})
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	srv.Wait()
	wg.Wait()
	tr.CloseIdleConnections()
	if len(acked) == 0 {
		t.Fatal("no message was acknowledged before the kill")
	}

	_, addr = startServerProcess(t, dir)
	c.base = "http://" + addr
	stored := map[int64]string{}
	var after int64
	for {
		var page struct{ Messages []message }
		if st := c.do("GET", fmt.Sprintf("/api/rooms/%s/messages?after=%d&limit=100", r.ID, after), nil, &page); st != 200 {
			t.Fatalf("history after restart: %d", st)
		}
		for _, m := range page.Messages {
			if m.Seq != after+1 {
				t.Fatalf("history after restart: seq %d follows %d", m.Seq, after)
			}
			stored[m.Seq] = m.Body
			after = m.Seq
		}
		if len(page.Messages) < 100 {
			break
		}
	}
	for seq, body := range acked {
		if got, ok := stored[seq]; !ok || got != body {
			t.Errorf("acknowledged seq %d = %q after restart, want %q", seq, got, body)
		}
	}
	t.Logf("%d acknowledged before SIGKILL, %d stored after restart", len(acked), len(stored))
}

func postMessage(hc *http.Client, addr, token, roomID, body string) (message, bool) {
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/rooms/"+roomID+"/messages",
		jsonReader(map[string]string{"body": body}))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return message{}, false
	}
	defer resp.Body.Close()
	var m message
	if resp.StatusCode != http.StatusCreated || decodeJSON(resp.Body, &m) != nil {
		return message{}, false
	}
	return m, true
}
