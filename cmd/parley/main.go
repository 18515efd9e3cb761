package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// versionString is version, with the commit the binary was built from
// when the Go toolchain recorded it (go build in a git checkout).
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return version + " (" + info.GoVersion + ")"
	}
	return fmt.Sprintf("%s (commit %.12s%s, %s)", version, rev, modified, info.GoVersion)
}

func main() {
	ctx, stop := signalContext()
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "parley:", err)
	}
	if code := exitCode(err); code != 0 {
		os.Exit(code)
	}
}

const usage = `usage: parley <command> [flags]

commands:
  serve     start a Parley node
  migrate   apply the store's pending schema migrations (--dry-run: report them)
  backup    write a consistent snapshot of a running node's SQLite database to a new file
  restore   check a snapshot and make it the database of a stopped data directory
  export    write a server's data, or one room's, as a parley-export file (JSON Lines)
  import    write a parley-export file into a stopped node or PostgreSQL, idempotently
  port      move a stopped SQLite node's data into PostgreSQL for cluster mode (--from DIR --to postgres://…)
  apikey    create, list or revoke the server API keys of bots (parley apikey create -h)
  webhook   add, list, resume or remove outgoing webhooks (parley webhook add -h)
  bench     drive a running server with a load scenario (parley bench -h)
  healthcheck  exit 0 if the node on --addr is healthy, 1 if not (--ready: /readyz)
  version   print the version (also --version, -v)

Run 'parley <command> -h' for the flags of a command.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "migrate":
		return runMigrate(ctx, args[1:], stdout, stderr)
	case "backup":
		return runBackup(ctx, args[1:], stdout, stderr)
	case "restore":
		return runRestore(ctx, args[1:], stdout, stderr)
	case "export":
		return runExport(ctx, args[1:], stdout, stderr)
	case "import":
		return runImport(ctx, args[1:], stdout, stderr)
	case "port":
		return runPort(ctx, args[1:], stdout, stderr)
	case "apikey":
		return runAPIKey(ctx, args[1:], stdout, stderr)
	case "webhook":
		return runWebhook(ctx, args[1:], stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version", "-v":
		fmt.Fprintln(stdout, "parley", versionString())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

// parseFlags parses args into fs, then fills every flag not given on the
// command line from its environment variable PARLEY_<NAME> (upper case,
// dashes as underscores), then, when fs has a --config flag that is set,
// every flag still unset from that file (see applyConfig): the command line
// wins over the environment, which wins over the file.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		key := EnvName(f.Name)
		if v := getenv(key); v != "" {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", key, v, serr)
			}
			set[f.Name] = true
		}
	})
	if err != nil {
		return err
	}
	if f := fs.Lookup("config"); f != nil && f.Value.String() != "" {
		return applyConfig(fs, f.Value.String(), set)
	}
	return nil
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return "PARLEY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
