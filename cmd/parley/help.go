package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// exitCode is the process's exit status for run's result: 0 for success
// and for a help request (-h, --help), 1 for a failed health check
// (parley healthcheck), 2 for anything else.
func exitCode(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if isUnhealthy(err) {
		return 1
	}
	return 2
}

// setUsage makes fs's help print head, then every flag with its type,
// its environment variable and its default.
func setUsage(fs *flag.FlagSet, w io.Writer, head string) {
	fs.Usage = func() {
		fmt.Fprint(w, head)
		printFlags(w, fs, nil)
	}
}

// printFlags lists fs's flags, one entry each:
//
//	--addr string   (PARLEY_ADDR)
//	    HTTP and WebSocket listen address (default "127.0.0.1:8080")
//
// With keep set, only the flags it keeps are listed.
func printFlags(w io.Writer, fs *flag.FlagSet, keep func(name string) bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if keep != nil && !keep(f.Name) {
			return
		}
		typ, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if typ != "" {
			line += " " + typ
		}
		fmt.Fprintf(w, "%s   (%s)\n      %s", line, EnvName(f.Name), strings.ReplaceAll(usage, "\n", "\n      "))
		if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "0s" {
			if typ == "string" {
				d = fmt.Sprintf("%q", d)
			}
			fmt.Fprintf(w, " (default %s)", d)
		}
		fmt.Fprintln(w)
	})
}

// serveUsage heads the help of parley serve.
const serveUsage = `usage: parley serve [flags]

Start a Parley node. With no flags: SQLite in ./data, in-process fan-out,
HTTP API, web client and WebSocket /ws on 127.0.0.1:8080.

Every flag can also be set by the environment variable named beside it
(the command line wins), or in the --config file, one PARLEY_NAME=value
per line. Cluster mode takes all three of --store, --broker and --redis.

`
