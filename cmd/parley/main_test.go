package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"parley/chat"
)

// TestMain lets a test run this binary as the real server: with
// PARLEY_TEST_EXEC_SERVE set, the test binary is `parley serve`; with
// PARLEY_TEST_EXEC_CLI set, it is `parley` (the docs test's commands).
func TestMain(m *testing.M) {
	if os.Getenv("PARLEY_TEST_EXEC_CLI") == "1" {
		ctx, stop := signalContext()
		defer stop()
		err := run(ctx, os.Args[1:], os.Stdout, os.Stderr) // as main does
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "parley:", err)
		}
		stop()
		os.Exit(exitCode(err))
	}
	if os.Getenv("PARLEY_TEST_EXEC_SERVE") == "1" {
		ctx, stop := signalContext()
		defer stop()
		if err := run(ctx, append([]string{"serve"}, os.Args[1:]...), os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "parley:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testKDF makes password hashing cheap in tests.
var testKDF = chat.KDF{Time: 1, Memory: 64, Threads: 1}

// serveDefaults is the Config of a plain `parley serve`: every flag's
// default, so that end-to-end tests run what users run.
func serveDefaults() Config {
	var c Config
	c.flags(flag.NewFlagSet("defaults", flag.ContinueOnError))
	return c
}

// MustOpenMain starts a node on 127.0.0.1:0 with a fresh data directory,
// the defaults of parley serve but for cheap password hashing, an hour's
// tokens and --sync normal, each opt changing them first; it closes at
// cleanup.
func MustOpenMain(t testing.TB, opts ...func(*Config)) *Main {
	t.Helper()
	cfg := serveDefaults()
	cfg.Addr, cfg.Data, cfg.Sync, cfg.TokenTTL, cfg.KDF = "127.0.0.1:0", t.TempDir(), "normal", time.Hour, testKDF
	m := &Main{Config: cfg}
	for _, opt := range opts {
		opt(&m.Config)
	}
	if err := m.Open(context.Background()); err != nil {
		t.Fatalf("open main: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close main: %v", err)
		}
	})
	return m
}

// client is a REST client for tests.
type client struct {
	t     testing.TB
	base  string
	token string
}

func newClient(t testing.TB, addr string) *client {
	return &client{t: t, base: "http://" + addr}
}

// do sends a request with a JSON (or raw string) body and decodes the
// response into out when out is not nil. It returns the status.
func (c *client) do(method, path string, body any, out any) int {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatalf("marshal: %v", err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatalf("new request: %v", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	checkAPIDoc(c.t, req, resp, data)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type user struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type room struct {
	ID             string `json:"id"`
	Kind           string `json:"kind"`
	Title          string `json:"title"`
	Capacity       int    `json:"capacity"`
	MemberCount    int    `json:"member_count"`
	LastSeq        int64  `json:"last_seq"`
	LastActivityAt string `json:"last_activity_at"`
}

type message struct {
	ID         string `json:"id"`
	RoomID     string `json:"room_id"`
	Seq        int64  `json:"seq"`
	SenderID   string `json:"sender_id"`
	SenderName string `json:"sender_name"`
	Body       string `json:"body"`
	ClientID   string `json:"client_id"`
	SentAt     string `json:"sent_at"`
}

// mustSignUp registers name and logs in, returning a client with its token.
func mustSignUp(t testing.TB, addr, name string) (*client, user) {
	t.Helper()
	c, u, err := signUp(t, addr, name)
	if err != nil {
		t.Fatal(err)
	}
	return c, u
}

// signUp is mustSignUp for any goroutine.
func signUp(t testing.TB, addr, name string) (*client, user, error) {
	c := newClient(t, addr)
	creds := map[string]string{"name": name, "password": "correct horse"}
	var u user
	if st := c.do("POST", "/api/users", creds, &u); st != http.StatusCreated {
		return nil, u, fmt.Errorf("register %s: status %d", name, st)
	}
	var tok struct {
		Token string `json:"token"`
		User  user   `json:"user"`
	}
	if st := c.do("POST", "/api/tokens", creds, &tok); st != http.StatusCreated {
		return nil, u, fmt.Errorf("login %s: status %d", name, st)
	}
	c.token = tok.Token
	return c, tok.User, nil
}

func jsonReader(v any) io.Reader {
	data, _ := json.Marshal(v)
	return bytes.NewReader(data)
}

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
