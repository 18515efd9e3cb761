package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The paced copy. VACUUM INTO rebuilds the whole database as fast as one
// core allows and writes it out in one burst, so on a server's core it
// takes the sends' time and, at its fsync, their disk. copyPaced copies
// with SQLite's online backup API instead: a few pages a step, the copy
// synced after each step, and a pause between steps so that it reads no
// faster than a rate. One read transaction, opened before the first step
// and held to the last, pins the snapshot: a step copies from it, not from
// the latest commit, so the writer's commits between steps neither show
// in the copy nor restart it (SQLite restarts a backup whose source
// changes under it only when the backup's own read transaction ends
// between steps).

// DefaultBackupRate is the pace of a backup when BackupConfig.Rate is
// zero, in bytes a second (see BENCHMARKS.md, "Backup while serving").
const DefaultBackupRate = 8_000_000

// backupStepPages is how many pages one step copies: 1 MiB of 4 KiB pages.
const backupStepPages = 256

// backupDestPragmas are run on the paced copy's destination: no journal
// (a failed copy is removed, not rolled back) and no syncs (copyPaced
// syncs the file itself after each step, spreading its writes).
var backupDestPragmas = []string{"PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF"}

// pageBackup is one online backup: sqlite3_backup_step, _remaining,
// _pagecount and _finish, through whichever driver is built in.
type pageBackup interface {
	step(n int) (done bool, err error)
	remaining() int
	pageCount() int
	finish() error
}

// BackupConfig says how Backup copies. The zero value is a paced copy at
// DefaultBackupRate.
type BackupConfig struct {
	// Rate is how many bytes a second the copy may read from the
	// database, at most; zero means DefaultBackupRate, a negative rate
	// no limit. A slower copy leaves a server on the same core and disk
	// more of both, and holds its WAL longer (the checkpointer cannot
	// restart the WAL while the copy's snapshot needs it).
	Rate int64
	// Vacuum copies with VACUUM INTO instead, in one statement at full
	// speed, Rate aside: the copy is compacted (no free pages), and it is
	// the quicker way when no server is running.
	Vacuum bool

	stepPages int                        // pages a step; zero: backupStepPages (tests)
	onStep    func(remaining, total int) // after each step but the last (tests)
}

// copyPaced copies the database at src into the empty file tmp with the
// online backup API, paced by cfg.
func copyPaced(ctx context.Context, src, tmp string, cfg BackupConfig) (err error) {
	rate := cfg.Rate
	if rate == 0 {
		rate = DefaultBackupRate
	}
	n := cmp.Or(cfg.stepPages, backupStepPages)
	abs, err := filepath.Abs(tmp)
	if err != nil {
		return err
	}
	db := openReadOnly(src)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// The snapshot: a deferred transaction takes it at its first read.
	var pageSize int64
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.Background(), "ROLLBACK"); err == nil && rerr != nil {
			err = fmt.Errorf("end the read transaction: %w", rerr)
		}
	}()
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(new(int64)); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return fmt.Errorf("page size: %w", err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return conn.Raw(func(dc any) error {
		b, err := newPageBackup(dc, abs)
		if err != nil {
			return fmt.Errorf("online backup: %w", err)
		}
		start := time.Now()
		var copied int64 // bytes
		var t *time.Timer
		for {
			done, err := b.step(n)
			if err != nil {
				b.finish()
				return fmt.Errorf("online backup: %w", err)
			}
			if done {
				break
			}
			// Paced, each step's pages reach the disk before the pause,
			// so that the copy's writes are spread as its reads are;
			// unpaced, the one fsync at the end (snapshot) is enough.
			if rate >= 0 {
				if err := f.Sync(); err != nil {
					b.finish()
					return err
				}
			}
			if cfg.onStep != nil {
				cfg.onStep(b.remaining(), b.pageCount())
			}
			copied += int64(n) * pageSize
			if rate < 0 {
				if err := ctx.Err(); err != nil {
					b.finish()
					return err
				}
				continue
			}
			// Wait until the bytes copied so far are due at rate.
			wait := time.Until(start.Add(time.Duration(float64(copied) / float64(rate) * float64(time.Second))))
			if wait <= 0 {
				wait = 0
			}
			if t == nil {
				t = time.NewTimer(wait)
				defer t.Stop()
			} else {
				t.Reset(wait)
			}
			select {
			case <-ctx.Done():
				b.finish()
				return ctx.Err()
			case <-t.C:
			}
		}
		if err := b.finish(); err != nil {
			return fmt.Errorf("online backup: %w", err)
		}
		return nil
	})
}
