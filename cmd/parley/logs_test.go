package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"parley/parleytest"
)

// jsonLogProcess is `parley serve --log-format json --log-level debug`
// in a process of its own, its log lines kept.
type jsonLogProcess struct {
	addr string
	mu   sync.Mutex // guards lines
	logs []map[string]any
	raw  []string
}

func startJSONLogProcess(t *testing.T) *jsonLogProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--sync", "normal",
		"--log-format", "json", "--log-level", "debug", "--signup-rate", "0")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_EXEC_SERVE=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &jsonLogProcess{}
	done := make(chan struct{})
	t.Cleanup(func() { cmd.Process.Kill(); <-done; cmd.Wait() })
	addrc := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l map[string]any
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				l = map[string]any{"unparsed": sc.Text()}
			}
			p.mu.Lock()
			p.logs, p.raw = append(p.logs, l), append(p.raw, sc.Text())
			p.mu.Unlock()
			if l["msg"] == "parley serving" {
				addrc <- l["addr"].(string)
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case p.addr = <-addrc:
	case <-time.After(60 * time.Second):
		t.Fatal("server did not log that it serves, in JSON, within 60 s")
	}
	return p
}

// await waits until n lines have msg, and returns every line so far.
func (p *jsonLogProcess) await(t *testing.T, msg string, n int) []map[string]any {
	t.Helper()
	var logs []map[string]any
	count := 0
	if !parleytest.Poll(20*time.Second, func() bool {
		p.mu.Lock()
		logs = append([]map[string]any(nil), p.logs...)
		p.mu.Unlock()
		count = 0
		for _, l := range logs {
			if l["msg"] == msg {
				count++
			}
		}
		return count >= n
	}) {
		t.Fatalf("%d of %d %q lines after 20 s; log:\n%s", count, n, msg, strings.Join(p.raw, "\n"))
	}
	return logs
}

// TestLogsOfASession runs a scripted session against a real process that
// logs JSON at debug level: every line parses, every STOMP lifecycle event
// has its line with the session id (open, auth ok and failed, closed with
// reason and duration), refusals name their code, REST errors carry a
// request id, and neither the token nor the password appears anywhere.
func TestLogsOfASession(t *testing.T) {
	p := startJSONLogProcess(t)
	const password = "unguessable-Horse-7781"
	c := newClient(t, p.addr)
	if st := c.do("POST", "/api/users", map[string]string{"name": "alice", "password": password}, nil); st != 201 {
		t.Fatalf("sign up: %d", st)
	}
	if st := c.do("POST", "/api/tokens", map[string]string{"name": "alice", "password": password + "x"}, nil); st != 401 {
		t.Fatalf("wrong password: %d, want 401", st)
	}
	var tok struct{ Token string }
	if st := c.do("POST", "/api/tokens", map[string]string{"name": "alice", "password": password}, &tok); st != 201 {
		t.Fatalf("log in: %d", st)
	}
	c.token = tok.Token
	var r room
	c.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "logs"}, &r)
	req, _ := http.NewRequest("GET", "http://"+p.addr+"/api/me", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token+"-not")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rid := resp.Header.Get("X-Request-Id")
	if resp.StatusCode != 401 || rid == "" {
		t.Fatalf("bad token: %d, X-Request-Id %q; want 401 with an id", resp.StatusCode, rid)
	}

	sc := dialStompAt(t, "websocket", p.addr, tok.Token)
	sc.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\n\n\x00")
	sc.send("SEND\ndestination:/app/rooms." + r.ID + "\nreceipt:s1\n\nhello\x00")
	for got := map[string]bool{}; !got["MESSAGE"] || !got["RECEIPT"]; {
		got[sc.read().Command.String()] = true
	}
	sc.send("DISCONNECT\nreceipt:bye\n\n\x00")
	sc.expect("RECEIPT", "receipt-id:bye")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/ws", &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	if err != nil {
		t.Fatal(err)
	}
	ws.Write(ctx, websocket.MessageText, []byte("CONNECT\naccept-version:1.2\nhost:parley\npasscode:"+tok.Token+"-forged\n\n\x00"))
	if _, frame, err := ws.Read(ctx); err != nil || !strings.HasPrefix(string(frame), "ERROR") {
		t.Fatalf("forged token: %q, %v; want ERROR", frame, err)
	}
	ws.CloseNow()

	logs := p.await(t, "stomp closed", 2)
	p.mu.Lock()
	raw := strings.Join(p.raw, "\n")
	p.mu.Unlock()
	if strings.Contains(raw, tok.Token) || strings.Contains(raw, password) {
		t.Errorf("the log holds the token or the password:\n%s", raw)
	}
	seen := map[string]int{}
	for _, l := range logs {
		if _, bad := l["unparsed"]; bad {
			t.Errorf("a log line is not JSON: %q", l["unparsed"])
		}
		msg, _ := l["msg"].(string)
		seen[msg]++
		if strings.HasPrefix(msg, "stomp ") && l["session"] == nil {
			t.Errorf("%q has no session id: %v", msg, l)
		}
		switch msg {
		case "stomp closed":
			if l["reason"] == nil || l["duration"] == nil {
				t.Errorf("stomp closed without reason or duration: %v", l)
			}
		case "stomp refusal":
			if l["code"] != "unauthorized" {
				t.Errorf("stomp refusal code = %v, want unauthorized", l["code"])
			}
		case "http refusal":
			if l["request_id"] == nil || l["code"] == nil {
				t.Errorf("http refusal without request id or code: %v", l)
			}
		}
	}
	for _, want := range []string{"stomp open", "stomp auth ok", "stomp auth failed", "stomp closed", "stomp refusal", "http refusal"} {
		if seen[want] == 0 {
			t.Errorf("no %q line in the log:\n%s", want, raw)
		}
	}
	reasons := map[string]bool{}
	for _, l := range logs {
		if l["msg"] == "stomp closed" {
			reasons[l["reason"].(string)] = true
		}
	}
	if !reasons["client sent DISCONNECT"] || !reasons["refused: unauthorized"] {
		t.Errorf("close reasons = %v, want the DISCONNECT and the refusal", reasons)
	}
	found := false
	for _, l := range logs {
		found = found || (l["msg"] == "http refusal" && l["request_id"] == rid)
	}
	if !found {
		t.Errorf("no http refusal line with the response's X-Request-Id %q", rid)
	}
}

// TestServicesAttrs: a node's start line names its services without the
// passwords in their URLs.
func TestServicesAttrs(t *testing.T) {
	c := Config{Store: "postgres://parley:s3cret@db:5432/parley?password=s3cret&sslmode=disable", Broker: "amqp://guest:hunter2@mq:5672/v", Redis: "redis://:redispw@cache:6379/0", RedisPrefix: "parley:"}
	got := fmt.Sprint(c.servicesAttrs())
	for _, secret := range []string{"s3cret", "hunter2", "redispw"} {
		if strings.Contains(got, secret) {
			t.Errorf("servicesAttrs() = %s, holds the password %q", got, secret)
		}
	}
	for _, want := range []string{"postgres://parley:xxxxx@db:5432/parley?password=xxxxx&sslmode=disable", "amqp://guest:xxxxx@mq:5672/v", "redis://:xxxxx@cache:6379/0"} {
		if !strings.Contains(got, want) {
			t.Errorf("servicesAttrs() = %s, want %s in it", got, want)
		}
	}
}
