package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/postgres"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "parley.env")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFile: the file fills what neither the command line nor the
// environment set, with the environment's syntax.
func TestConfigFile(t *testing.T) {
	path := writeConfig(t, `# a node
PARLEY_STORE="postgres://db/parley"
export PARLEY_NODE_ID = 'node-1'

PARLEY_TOKEN_TTL=1h
PARLEY_MAX_BODY=100
PARLEY_ADDR=127.0.0.1:1
`)
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.flags(fs)
	fs.String("config", "", configHelp)
	env := map[string]string{"PARLEY_CONFIG": path, "PARLEY_TOKEN_TTL": "2h"}
	if err := parseFlags(fs, []string{"--max-body", "200"}, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	if c.Store != "postgres://db/parley" || c.NodeID != "node-1" || c.Addr != "127.0.0.1:1" {
		t.Errorf("from the file: store %q, node %q, addr %q", c.Store, c.NodeID, c.Addr)
	}
	if c.TokenTTL != 2*time.Hour {
		t.Errorf("token TTL = %v, want the environment's 2h", c.TokenTTL)
	}
	if c.MaxBody != 200 {
		t.Errorf("max body = %d, want the command line's 200", c.MaxBody)
	}
	if c.Data != "./data" {
		t.Errorf("data = %q, want the default", c.Data)
	}
}

// TestConfigFileErrors: a key that is no setting, a line without "=" and a
// bad value are refused with the line; a setting of serve that another
// command lacks is skipped.
func TestConfigFileErrors(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"PARLEY_STOER=postgres://x\n", ":1: PARLEY_STOER is not a setting"},
		{"# ok\nPARLEY_STORE\n", ":2: want NAME=value"},
		{"PARLEY_MAX_BODY=lots\n", `:1: PARLEY_MAX_BODY="lots"`},
	} {
		var c Config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		c.flags(fs)
		fs.String("config", "", configHelp)
		err := parseFlags(fs, []string{"--config", writeConfig(t, tt.text)}, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error with %q", tt.text, err, tt.want)
		}
	}
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	store := fs.String("store", "", "")
	fs.String("config", "", configHelp)
	path := writeConfig(t, "PARLEY_STORE=postgres://x\nPARLEY_NODE_ID=n1\n")
	if err := parseFlags(fs, []string{"--config", path}, func(string) string { return "" }); err != nil || *store != "postgres://x" {
		t.Errorf("migrate reading a node's file: %v, store %q", err, *store)
	}
	if err := parseFlags(flag.NewFlagSet("x", flag.ContinueOnError), nil, func(string) string { return "" }); err != nil {
		t.Errorf("no --config flag: %v", err)
	}
}

// TestConfigFileByteOrderMark: a file some editor began with a byte order
// mark reads as the same file without it.
func TestConfigFileByteOrderMark(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.flags(fs)
	fs.String("config", "", configHelp)
	path := writeConfig(t, "\uFEFFPARLEY_NODE_ID=n1\r\nPARLEY_ALLOWED_ORIGINS=* # not a comment\r\n")
	if err := parseFlags(fs, []string{"--config", path}, func(string) string { return "" }); err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	if c.NodeID != "n1" || c.AllowedOrigins != "* # not a comment" {
		t.Errorf("node id %q, origins %q; want n1 and the whole rest of the line", c.NodeID, c.AllowedOrigins)
	}
}

// TestPGWritersFlag: --pg-writers and PARLEY_PG_WRITERS set the PostgreSQL
// store's writers, the default being the store's; a negative count stops
// the server with the flag's name.
func TestPGWritersFlag(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"default", nil, nil, postgres.DefaultWriters},
		{"flag", []string{"--pg-writers", "3"}, nil, 3},
		{"environment", nil, map[string]string{"PARLEY_PG_WRITERS": "1"}, 1},
		{"flag wins", []string{"--pg-writers", "4"}, map[string]string{"PARLEY_PG_WRITERS": "1"}, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if cfg := mustParseServe(t, tt.args, tt.env); cfg.PGWriters != tt.want {
				t.Errorf("parseFlags(%q, %v): PGWriters = %d, want %d", tt.args, tt.env, cfg.PGWriters, tt.want)
			}
		})
	}
	wantOpenRefused(t, Config{PGWriters: -1}, "--pg-writers")
}

// mustParseServe returns the serve configuration of args and env (the
// environment's variables by name).
func mustParseServe(t *testing.T, args []string, env map[string]string) Config {
	t.Helper()
	var cfg Config
	fs := flag.NewFlagSet("parley serve", flag.ContinueOnError)
	cfg.flags(fs)
	if err := parseFlags(fs, args, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("parseFlags(%q) error = %v", args, err)
	}
	return cfg
}

// wantOpenRefused checks that a node with cfg (on loopback, SQLite in a
// temporary directory) does not start, with an error naming flag.
func wantOpenRefused(t *testing.T, cfg Config, flag string) {
	t.Helper()
	cfg.Addr, cfg.Data, cfg.Sync, cfg.KDF = "127.0.0.1:0", t.TempDir(), "normal", testKDF
	m := &Main{Config: cfg}
	err := m.Open(context.Background())
	m.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), flag) {
		t.Errorf("Open() with %s: error = %v, want one naming the flag", flag, err)
	}
}

// TestAccountFlagsRefuseNegative: a negative --delete-signin-window or
// --deleted-name-hold is refused by name, not taken silently as the
// default (which would let an account delete itself with a sign-in ten
// minutes old, or hold a name 30 days, when the operator asked otherwise).
func TestAccountFlagsRefuseNegative(t *testing.T) {
	wantOpenRefused(t, Config{DeleteSignInWindow: -time.Minute}, "--delete-signin-window")
	wantOpenRefused(t, Config{DeletedNameHold: -time.Hour}, "--deleted-name-hold")
}
