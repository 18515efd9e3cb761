package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"parley/dirlock"
	"parley/sqlite"
)

// postgresBackupAdvice is why parley backup and restore refuse PostgreSQL.
const postgresBackupAdvice = "the PostgreSQL store is backed up with PostgreSQL's own tools, which take a consistent snapshot of a live database that every node shares: " +
	"pg_dump -Fc (a logical dump, restored with pg_restore) or pg_basebackup (a physical base backup, with WAL archiving for point-in-time recovery); see docs/operations.md"

// sqliteOnly refuses a --store other than SQLite's (empty) for command,
// with the advice for PostgreSQL.
func sqliteOnly(command, store string) error {
	switch {
	case isPostgres(store):
		return errors.New(command + ": " + postgresBackupAdvice)
	case store != "":
		return fmt.Errorf("--store %q: want empty (SQLite) or postgres://…", store)
	}
	return nil
}

// runBackup is `parley backup DEST`: a consistent snapshot of the SQLite
// database in --data, taken beside a running server (it takes no lock).
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("parley backup", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var store, data string
	fl.StringVar(&store, "store", "", "store: empty for SQLite in --data; postgres://… is refused (use pg_dump or pg_basebackup)")
	fl.StringVar(&data, "data", "./data", "data directory of the embedded SQLite store")
	rate := fl.Float64("backup-rate", float64(sqlite.DefaultBackupRate)/1e6, "MB a second the copy may read, at most, so that a server on the same machine keeps its CPU and disk; 0: no limit")
	vacuum := fl.Bool("vacuum", false, "copy with VACUUM INTO at full speed (a compacted copy; the quickest with no server running), --backup-rate aside")
	s3 := fl.String("files-s3-endpoint", "", "the node keeps its files in this S3-compatible store: the backup holds their rows, the blobs stay in the bucket (empty: they are copied from the files directory under --data to DEST.files)")
	fl.String("config", "", configHelp)
	setUsage(fl, stderr, "usage: parley backup [flags] DEST\n\nWrite a consistent snapshot of the SQLite database in --data to the new file DEST,\nwhile the server runs or not, and the blobs of its files to the new directory DEST.files.\nDEST must not exist.\nEvery flag can also be set by the environment variable named beside it.\n\n")
	dest, err := parseWithArg(fl, args, "DEST")
	if err != nil {
		return err
	}
	if err := sqliteOnly("backup", store); err != nil {
		return err
	}
	cfg := sqlite.BackupConfig{Vacuum: *vacuum}
	switch {
	case *rate < 0:
		return fmt.Errorf("--backup-rate %v: want MB a second, or 0 for no limit", *rate)
	case *rate == 0:
		cfg.Rate = -1 // no limit
	default:
		cfg.Rate = max(1, int64(*rate*1e6)) // a tiny rate stays a limit
	}
	db := sqliteFile(data)
	if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup: no database in %s (%s does not exist)", data, db)
	}
	var stage string
	if *s3 == "" {
		if stage, err = stageBlobs(data, dest); err != nil {
			return err
		}
		defer os.RemoveAll(stage) // gone by the rename, unless a step failed
	}
	bi, err := sqlite.Backup(ctx, db, dest, cfg)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("backup: %s exists: choose a new file", dest)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s: %v\n", db, dest, bi)
	if *s3 != "" {
		_, n, size, err := blobRefs(ctx, dest)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "its %d files (%d bytes) stay in the S3 bucket of %s: the backup holds their rows, not their bytes\n", n, size, *s3)
		return nil
	}
	n, size, err := keepBlobs(ctx, data, dest, stage)
	if err != nil {
		os.Remove(dest) // a backup whose files are not whole is none
		return err
	}
	if n > 0 {
		fmt.Fprintf(stdout, "backed up %d files (%d bytes) to %s\n", n, size, backupFilesDir(dest))
	}
	return nil
}

// runRestore is `parley restore SRC`: it replaces the SQLite database of a
// stopped data directory with the snapshot SRC, after checking it.
func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fl := flag.NewFlagSet("parley restore", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var store, data string
	var force bool
	fl.StringVar(&store, "store", "", "store: empty for SQLite in --data; postgres://… is refused (use pg_restore or the base backup)")
	fl.StringVar(&data, "data", "./data", "data directory of the embedded SQLite store; no server may be running on it")
	fl.BoolVar(&force, "force", false, "replace a data directory's database that holds data")
	s3 := fl.String("files-s3-endpoint", "", "the node keeps its files in this S3-compatible store, where they stayed: restore their rows only (empty: their blobs come from SRC.files into the files directory under --data)")
	fl.String("config", "", configHelp)
	setUsage(fl, stderr, "usage: parley restore [flags] SRC\n\nCheck the snapshot SRC (from parley backup) and make it the SQLite database of --data,\nwhich no server may be running on. Refuses a database that holds data unless --force.\nEvery flag can also be set by the environment variable named beside it.\n\n")
	src, err := parseWithArg(fl, args, "SRC")
	if err != nil {
		return err
	}
	if err := sqliteOnly("restore", store); err != nil {
		return err
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	// A directory this call creates is removed again when it fails, so
	// that a refused restore leaves nothing behind.
	lock, forget, err := lockDataDir(data, "restore")
	if err != nil {
		return err
	}
	defer func() {
		lock.Close()
		if err != nil {
			forget()
		}
	}()
	db := sqliteFile(data)
	if !force {
		for _, p := range []string{db, db + "-wal"} {
			if st, err := os.Stat(p); err == nil && st.Size() > 0 {
				return fmt.Errorf("restore: %s holds a database (%d bytes): restore into an empty data directory, or pass --force to replace it", p, st.Size())
			}
		}
	}
	undo, report := func() {}, ""
	if *s3 == "" {
		if undo, report, err = restoreBlobs(ctx, src, data); err != nil {
			return err
		}
	}
	bi, err := sqlite.Restore(ctx, src, db)
	if err != nil {
		undo()
		return err
	}
	fmt.Fprint(stdout, report)
	fmt.Fprintf(stdout, "restored %s into %s: %v\n", src, db, bi)
	if bi.Version < bi.Latest {
		fmt.Fprintf(stdout, "its schema is version %d of this program's %d: parley serve (or parley migrate) will upgrade it\n", bi.Version, bi.Latest)
	}
	return nil
}

// parseWithArg parses a command's flags, given before or after its one
// argument (named name in the errors), as parseFlags does, and returns
// the argument.
func parseWithArg(fl *flag.FlagSet, args []string, name string) (string, error) {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		fname := strings.TrimLeft(a, "-")
		if strings.Contains(fname, "=") {
			continue
		}
		if f := fl.Lookup(fname); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := parseFlags(fl, flags, os.Getenv); err != nil {
		return "", err
	}
	if len(rest) != 1 {
		fl.Usage()
		if len(rest) == 0 {
			return "", fmt.Errorf("no %s given", name)
		}
		return "", fmt.Errorf("want one %s, got %q", name, rest)
	}
	return rest[0], nil
}

// isBoolFlag reports whether f takes no value (--force, not --force true).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// lockDataDir takes the lock of the SQLite data directory data for op
// (restore, import), making the directory when it is missing. forget
// removes a directory this call made, and the lock's file in it, once the
// lock is closed: a caller that fails before writing into it leaves
// nothing behind.
func lockDataDir(data, op string) (lock *dirlock.Lock, forget func(), err error) {
	forget = func() {}
	if _, err := os.Stat(data); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(data, 0o750); err != nil {
			return nil, nil, fmt.Errorf("%s: data directory: %w", op, err)
		}
		forget = func() {
			os.Remove(filepath.Join(data, dirlock.FileName))
			os.Remove(data)
		}
	}
	lock, err = dirlock.Acquire(data)
	if err != nil {
		forget()
		return nil, nil, fmt.Errorf("%s: data directory: %w: stop the server first", op, err)
	}
	return lock, forget, nil
}
