package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"parley/dirlock"
	"parley/files"
	"parley/port"
	"parley/postgres"
	"parley/sqlite"
)

// portUsage heads the help of parley port.
const portUsage = `usage: parley port --from DIR --to postgres://… [flags]

Move the whole data of a stopped SQLite node (its data directory DIR) into
a PostgreSQL database for cluster mode: users, tokens, rooms, members,
bans, every message with its edits and tombstones, change and read
positions, and the files: their rows, and their blobs, from DIR/files to
the cluster's object store (--files-s3-*). The target is migrated to the current schema, and must be
empty or hold an interrupted port of the same source, which is resumed.
At the end both stores are compared (row counts, per-table and per-room
checksums); a difference fails the command. See docs/operations.md.
Every flag can also be set by the environment variable named beside it.

`

// runPort is `parley port`.
func runPort(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("parley port", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var from, to, progress string
	var batch, writers, stopAfter int
	var verifyOnly bool
	fl.StringVar(&from, "from", "", "data directory of the stopped SQLite node to port (required)")
	fl.StringVar(&to, "to", "", "PostgreSQL database to port into, postgres://user@host:port/db (required)")
	fl.IntVar(&batch, "batch", port.DefaultBatch, "rows a transaction")
	fl.IntVar(&writers, "writers", port.DefaultWriters, "connections that copy the messages at once, each a range of them")
	fl.BoolVar(&verifyOnly, "verify-only", false, "copy nothing: compare the two stores and report")
	fl.StringVar(&progress, "progress", "auto", "progress line on standard error: auto (when it is a terminal), on, off")
	fl.IntVar(&stopAfter, "stop-after", 0, "stop after this many batches, as a kill would (to try resuming)")
	var fc filesConfig
	fc.flags(fl) // the cluster's --files-s3-*, where the files' blobs go
	fl.String("config", "", configHelp)
	setUsage(fl, stderr, portUsage)
	if err := parseFlags(fl, args, os.Getenv); err != nil {
		return err
	}
	if from == "" || to == "" {
		fl.Usage()
		return errors.New("port: --from and --to are required")
	}
	if !isPostgres(to) {
		return fmt.Errorf("port: --to %q: want postgres://…", to)
	}
	if writers <= 0 {
		writers = port.DefaultWriters
	}
	src, unlock, err := openPortSource(ctx, from, writers)
	if err != nil {
		return err
	}
	defer unlock()
	defer src.Close()
	// The files' blobs go to the cluster's object store: without one, a
	// source with files is refused before anything changes.
	_, nfiles, _, err := blobRefs(ctx, sqliteFile(from))
	if err != nil {
		return fmt.Errorf("port: %w", err)
	}
	var blobs files.Blobs
	switch {
	case nfiles > 0 && fc.S3Endpoint == "":
		return fmt.Errorf("port: the source holds %d files, whose bytes go to the cluster's object store: give its --files-s3-endpoint, --files-s3-bucket and keys, as the nodes have them (docs/files.md)", nfiles)
	case nfiles > 0:
		s3, err := fc.openS3(ctx)
		if err != nil {
			return fmt.Errorf("port: %w", err)
		}
		blobs = s3
	}
	// A target of a newer schema is refused here, before anything changes.
	st, err := postgres.Migrate(ctx, to, false)
	if err != nil {
		return fmt.Errorf("port: target: %w", err)
	}
	cfg := port.Config{
		Source: src, Target: to, Batch: batch, Writers: writers, StopAfter: stopAfter, Log: stderr,
		Migrate: func(ctx context.Context) error {
			if len(st.Pending) > 0 {
				fmt.Fprintf(stderr, "port: migrating the target: %s\n", strings.Join(st.Pending, ", "))
			}
			_, err := postgres.Migrate(ctx, to, true)
			return err
		},
	}
	switch progress {
	case "on":
		cfg.Progress = portProgress(stderr, isTerminal(stderr))
	case "auto":
		if isTerminal(stderr) {
			cfg.Progress = portProgress(stderr, true)
		}
	case "off":
	default:
		return fmt.Errorf("port: --progress must be auto, on or off, not %q", progress)
	}
	if verifyOnly {
		rep, err := port.Verify(ctx, cfg)
		fmt.Fprint(stdout, rep)
		if err == nil && blobs != nil {
			err = verifyBlobs(ctx, sqliteFile(from), blobs, stdout)
		}
		if err == nil {
			fmt.Fprintf(stdout, "the stores hold the same data (verified in %v)\n", rep.Took.Round(time.Millisecond))
		}
		return err
	}
	res, err := port.Run(ctx, cfg)
	if res.Report.Tables != nil {
		fmt.Fprint(stdout, res.Report)
	}
	if err != nil {
		return err
	}
	if blobs != nil {
		bc, err := portBlobs(ctx, sqliteFile(from), filepath.Join(from, "files"), blobs)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "files: %d (%d bytes), their blobs in %s: %d copied (and %d previews), %d there already, each checked by size and SHA-256\n",
			bc.Files, bc.Bytes, fc.S3Endpoint, bc.Copied, bc.PreviewsCopied, bc.Had)
	}
	switch {
	case res.Already:
		fmt.Fprintf(stdout, "%s was ported already; verified again in %v\n", to, res.Report.Took.Round(time.Millisecond))
	default:
		rate := 0.0
		if res.Took > 0 {
			rate = float64(res.Messages) / res.Took.Seconds()
		}
		resumed := ""
		if res.Resumed {
			resumed = " (resumed)"
		}
		fmt.Fprintf(stdout, "ported %s into %s%s: %d messages in %v (%.0f messages/s), verified in %v\n",
			from, redactURL(to), resumed, res.Messages, res.Took.Round(time.Millisecond), rate, res.Report.Took.Round(time.Millisecond))
	}
	return nil
}

// openPortSource checks that dir is the data directory of a stopped node
// whose database is Parley's, at this program's schema, takes the
// directory's lock (released by unlock) and opens the database read-only.
func openPortSource(ctx context.Context, dir string, readers int) (src *sql.DB, unlock func(), err error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("port: --from %s: no such directory", dir)
		}
		return nil, nil, fmt.Errorf("port: --from %s: not a directory (%v)", dir, err)
	}
	db := sqliteFile(dir)
	if _, err := os.Stat(db); err != nil {
		return nil, nil, fmt.Errorf("port: --from %s is not a Parley data directory: %s does not exist", dir, db)
	}
	// Checked before the lock is taken, so that a file that is not a
	// Parley database gets no lock file beside it.
	bi, err := sqlite.Inspect(ctx, db)
	if err == nil && bi.Version < bi.Latest {
		err = fmt.Errorf("%s: schema version %d of this program's %d: run parley migrate --data %s first", db, bi.Version, bi.Latest, dir)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("port: source: %w", err)
	}
	lock, err := dirlock.Acquire(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("port: --from %s: %w: a node is running on it; stop it first", dir, err)
	}
	src = sqlite.OpenReadOnly(db)
	src.SetMaxOpenConns(1 + readers) // the copy's readers run at once
	return src, func() { lock.Close() }, nil
}

// portProgress returns a Progress callback that draws one line on w: over
// and over on a terminal, else a new line for each table and at most
// every few seconds.
func portProgress(w io.Writer, terminal bool) func(port.Progress) {
	const width = 30
	var last time.Time
	var table string
	return func(p port.Progress) {
		if !terminal && !p.Final && p.Table == table && time.Since(last) < 5*time.Second {
			return
		}
		last, table = time.Now(), p.Table
		frac := 1.0
		if p.Total > 0 {
			frac = float64(p.Done) / float64(p.Total)
		}
		n := int(frac * width)
		line := fmt.Sprintf("port %-11s [%s%s] %3.0f%%  %d of %d rows  %.0f messages/s",
			p.Table, strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*frac, p.Done, p.Total, p.Rate())
		if eta := p.ETA(); eta > 0 {
			line += "  ETA " + eta.Round(time.Second).String()
		}
		switch {
		case terminal && p.Final:
			fmt.Fprint(w, "\r\033[K"+line+"\n")
		case terminal:
			fmt.Fprint(w, "\r\033[K"+line)
		default:
			fmt.Fprintln(w, line)
		}
	}
}
