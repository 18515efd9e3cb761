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
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley/bulk"
	"parley/files"
	"parley/postgres"
	"parley/redis"
	"parley/sqlite"
)

// runExport is `parley export`: a server's data, or one room's, as a
// parley-export file (docs/export-format.md), read from one consistent
// snapshot of the store.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("parley export", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var store, data, room, out string
	var secrets bool
	fl.StringVar(&store, "store", "", "store: empty for SQLite in --data, or postgres://user@host:port/db")
	fl.StringVar(&data, "data", "./data", "data directory of the embedded SQLite store (a running server's too)")
	fl.StringVar(&room, "room", "", "export this room (and the accounts it names) only; default: the whole server")
	fl.BoolVar(&secrets, "with-secrets", false, "add the password hashes and the tokens' hashes (keep the file as private as the data)")
	fl.StringVar(&out, "o", "-", "the new file to write (it must not exist); - for standard output")
	filesDir := fl.String("files-dir", "", "also write the bytes of the exported files into this new directory, a file per blob (default: the files' rows only)")
	var fc filesConfig
	fc.flags(fl) // with PostgreSQL and --files-dir: the cluster's --files-s3-*
	fl.String("config", "", configHelp)
	setUsage(fl, stderr, "usage: parley export [flags]\n\nWrite the store's data, or one room's, as a parley-export file (JSON Lines,\ndocs/export-format.md), from one consistent snapshot, beside running servers or not.\nEvery flag can also be set by the environment variable named beside it.\n\n")
	if err := parseFlags(fl, args, os.Getenv); err != nil {
		return err
	}
	start := time.Now()
	var src interface {
		bulk.Source
		Close() error
	}
	var name string
	switch {
	case isPostgres(store):
		snap, err := postgres.OpenSnapshot(ctx, store)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		src, name = snap, "postgres"
	case store == "":
		db := sqliteFile(data)
		if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("export: no database in %s (%s does not exist)", data, db)
		}
		snap, err := sqlite.OpenSnapshot(ctx, db)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		src, name = snap, "sqlite"
	default:
		return fmt.Errorf("--store %q: want empty (SQLite) or postgres://…", store)
	}
	defer src.Close()
	w, done, err := createOutput(out, stdout)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	opt := bulk.Options{Room: room, WithSecrets: secrets, Source: name}
	if *filesDir != "" {
		blobs, err := blobStore(ctx, store, data, &fc, "export")
		if err != nil {
			done(false)
			return err
		}
		if err := os.Mkdir(*filesDir, 0o750); err != nil {
			done(false)
			return fmt.Errorf("export: --files-dir: %w (it must be a new directory)", err)
		}
		opt.OnFile = func(f *bulk.File) error { return exportBlob(ctx, blobs, *filesDir, f) }
	}
	c, err := bulk.Export(ctx, src, w, opt)
	if derr := done(err == nil); err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(stderr, "exported %s to %s: %s in %v (%.0f messages/s)\n", name, out, countsString(c), took.Round(time.Millisecond),
		float64(c.Messages)/took.Seconds())
	return nil
}

// createOutput opens the export's output: stdout for "-", else a
// temporary file beside path that done(true) fsyncs and links to path,
// so that path is either absent or whole (an existing path is refused),
// and done(false) removes.
func createOutput(path string, stdout io.Writer) (io.Writer, func(ok bool) error, error) {
	if path == "-" {
		return stdout, func(bool) error { return nil }, nil
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, nil, fmt.Errorf("%s exists: choose a new file", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, nil, err
	}
	return f, func(ok bool) error {
		defer os.Remove(f.Name())
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && ok {
			err = os.Link(f.Name(), path) // never replaces a file made since the check
		}
		if err != nil {
			return fmt.Errorf("export to %s: %w", path, err)
		}
		return nil
	}, nil
}

// countsString reports c in one line.
func countsString(c bulk.Counts) string {
	return fmt.Sprintf("%d users, %d tokens, %d API keys, %d name holds, %d rooms, %d members, %d bans, %d messages, %d change keys, %d files",
		c.Users, c.Tokens, c.APIKeys, c.NameHolds, c.Rooms, c.Members, c.Bans, c.Messages, c.ChangeKeys, c.Files)
}

// runImport is `parley import FILE`: a parley-export file written into a
// stopped node's data directory, or into PostgreSQL, idempotently.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fl := flag.NewFlagSet("parley import", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var store, data, redisURL, prefix string
	var noRedis bool
	fl.StringVar(&store, "store", "", "store: empty for SQLite in --data, or postgres://user@host:port/db")
	fl.StringVar(&data, "data", "./data", "data directory of the embedded SQLite store; no server may be running on it")
	fl.StringVar(&redisURL, "redis", "", "PostgreSQL: the cluster's Redis, whose hot data of what the import writes it forgets (required unless --no-redis)")
	fl.StringVar(&prefix, "redis-prefix", "parley:", "PostgreSQL: the nodes' --redis-prefix")
	fl.BoolVar(&noRedis, "no-redis", false, "PostgreSQL: no Redis holds this database's hot data (no node has run on it, or its Redis was flushed and the nodes are stopped)")
	filesDir := fl.String("files-dir", "", "the directory parley export --files-dir wrote: every file's bytes are checked in it first, then put in the store's files (default: the files' rows only)")
	var fc filesConfig
	fc.flags(fl) // with PostgreSQL and --files-dir: the cluster's --files-s3-*
	fl.String("config", "", configHelp)
	setUsage(fl, stderr, "usage: parley import [flags] FILE\n\nWrite the parley-export file FILE into the store: into a stopped node's --data, or into\nPostgreSQL beside running nodes (with --redis). Records already there are skipped: importing\na file twice, or again after a failure, writes it once. The file is checked whole first.\nEvery flag can also be set by the environment variable named beside it.\n\n")
	file, err := parseWithArg(fl, args, "FILE")
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	start := time.Now()
	var sink interface {
		bulk.Sink
		Close() error
	}
	var opt bulk.ImportOptions
	// The whole file is checked before the store is opened (a bad file
	// makes no database and no connection); bulk.Write then reads it once
	// more to write it, and stops if it changed meanwhile.
	var checked bulk.Result
	var refs []files.Ref
	var blobs files.Blobs
	check := func() (err error) {
		if checked, err = bulk.Check(f); err != nil {
			return fmt.Errorf("import %s: %w", file, err)
		}
		if *filesDir == "" {
			return nil
		}
		if refs, err = fileRefs(f); err != nil {
			return fmt.Errorf("import %s: %w", file, err)
		}
		if err := checkImportBlobs(*filesDir, refs); err != nil {
			return fmt.Errorf("import %s: %w", file, err)
		}
		if blobs, err = blobStore(ctx, store, data, &fc, "import"); err != nil {
			return err
		}
		return nil
	}
	switch {
	case isPostgres(store):
		if redisURL == "" && !noRedis {
			return errors.New("import: PostgreSQL: the running nodes cache rooms and memberships in Redis: pass --redis URL (and --redis-prefix) so that the import forgets what it changes, or --no-redis when no Redis holds this database's hot data")
		}
		if err := check(); err != nil {
			return err
		}
		if redisURL != "" {
			rdb, err := dialRedis(ctx, Config{Redis: redisURL})
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			defer rdb.Close()
			opt.AfterBatch = forgetImported(rdb, prefix)
		}
		db, err := postgres.Open(ctx, postgres.Config{URL: store, LivenessTimeout: -1})
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		sink = db
	case store == "":
		// A directory this call creates is removed again when it fails
		// before the store is opened, so that a refused import leaves
		// nothing behind.
		lock, forget, lerr := lockDataDir(data, "import")
		if lerr != nil {
			return lerr
		}
		defer func() {
			lock.Close()
			if err != nil && sink == nil {
				forget()
			}
		}()
		if err := check(); err != nil {
			return err
		}
		db, err := sqlite.Open(ctx, sqlite.Config{Path: sqliteFile(data), Sync: sqlite.SyncNormal})
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		sink = db
	default:
		return fmt.Errorf("--store %q: want empty (SQLite) or postgres://…", store)
	}
	res, err := bulk.Write(ctx, sink, f, checked, opt)
	if db, ok := sink.(*sqlite.Store); ok && err == nil {
		// The search indexer indexes the messages after their batches:
		// the import ends with the index caught up.
		err = db.WaitIndexed(ctx)
	}
	if cerr := sink.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if res.Written.Records() > 0 {
			fmt.Fprintf(stdout, "imported before the failure: %s; run the import again once it is fixed: what is there is skipped\n", countsString(res.Written))
		}
		return fmt.Errorf("import %s: %w", file, err)
	}
	if blobs != nil {
		n, err := importBlobs(ctx, *filesDir, refs, blobs)
		if err != nil {
			return fmt.Errorf("import %s: the files' bytes: %w (the records are written; run the import again)", file, err)
		}
		fmt.Fprintf(stdout, "put %d blobs of the files from %s into the store's files (%d there already)\n", n, *filesDir, len(refs)-n)
	}
	took := time.Since(start)
	fmt.Fprintf(stdout, "imported %s: %s written (%d records there already) in %v (%.0f messages/s)\n", file, countsString(res.Written),
		res.File.Records()-res.Written.Records(), took.Round(time.Millisecond), float64(res.File.Messages)/took.Seconds())
	if !res.Header.WithSecrets && res.Written.Users > 0 {
		fmt.Fprintf(stdout, "the file holds no password hashes: the %d accounts it added cannot log in (export with --with-secrets to move them)\n", res.Written.Users)
	}
	if res.DroppedMentions > 0 {
		fmt.Fprintf(stdout, "left out %d mentions of users who are not members of the message's room in the file (they left it, or their accounts were deleted)\n", res.DroppedMentions)
	}
	return nil
}

// forgetImported is the import's AfterBatch in cluster mode: the nodes'
// hot data in Redis of the rooms and users a batch wrote is dropped, and
// the heads of its rooms moved to their imported messages, so that the
// nodes read them from PostgreSQL.
func forgetImported(rdb *goredis.Client, prefix string) func(context.Context, *bulk.Batch) error {
	heads := redis.NewHeads(rdb, prefix)
	return func(ctx context.Context, b *bulk.Batch) error {
		rooms, users, seen := []string{}, []string{}, map[string]bool{}
		add := func(list *[]string, kind, id string) {
			if !seen[kind+id] {
				seen[kind+id] = true
				*list = append(*list, id)
			}
		}
		top := map[string]int64{}
		for _, r := range b.Rooms {
			add(&rooms, "r", r.ID)
		}
		for _, m := range b.Messages {
			add(&rooms, "r", m.RoomID)
			top[m.RoomID] = max(top[m.RoomID], m.Seq)
		}
		for _, x := range b.Bans {
			add(&rooms, "r", x.RoomID)
			add(&users, "u", x.UserID)
		}
		for _, m := range b.Members {
			add(&rooms, "r", m.RoomID)
			add(&users, "u", m.UserID)
		}
		if err := redis.ForgetHot(ctx, rdb, prefix, rooms, users); err != nil {
			return err
		}
		if len(top) == 0 {
			return nil
		}
		return heads.Advance(ctx, top)
	}
}
