package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
)

// configHelp is the help of the --config flag.
const configHelp = "file of settings, one PARLEY_NAME=value per line, as the environment variables (a line starting with # is a comment); the command line and the environment win over it"

// applyConfig sets, from the config file at path, every flag of fs that
// set does not name. The file has the environment's syntax, so that the
// same file serves as a systemd EnvironmentFile (docker's --env-file takes
// it too, without quotes, "export" or spaces around "="). A line starting
// with # is a comment; a # later in a line is part of the value:
//
//	# node 1
//	PARLEY_STORE=postgres://parley@db:5432/parley
//	PARLEY_NODE_ID="node-1"
//
// Every key must be a setting of serve; a key of serve that fs lacks (a
// migrate run reading the nodes' file) is skipped. Anything else is
// refused with its line, so that a typo never silently falls back to a
// default.
func applyConfig(fs *flag.FlagSet, path string, set map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	byKey := map[string]string{} // environment name → flag name, of fs
	fs.VisitAll(func(f *flag.Flag) { byKey[EnvName(f.Name)] = f.Name })
	serve := map[string]bool{}
	serveFlags := flag.NewFlagSet("", flag.ContinueOnError)
	new(Config).flags(serveFlags)
	serveFlags.VisitAll(func(f *flag.Flag) { serve[EnvName(f.Name)] = true })

	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 {
			line = strings.TrimPrefix(line, "\uFEFF") // a byte order mark some editors write
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(strings.TrimPrefix(key, "export "))
		if !ok || key == "" {
			return fmt.Errorf("%s:%d: want NAME=value", path, n)
		}
		value = unquote(strings.TrimSpace(value))
		name, ok := byKey[key]
		switch {
		case !ok && serve[key]:
			continue
		case !ok:
			return fmt.Errorf("%s:%d: %s is not a setting", path, n, key)
		case set[name] || name == "config":
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: %s=%q: %w", path, n, key, value, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	return nil
}

// unquote strips one pair of matching double or single quotes.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}
