package dirlock

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the lock file Acquire creates in the directory.
const FileName = "parley.lock"

// Lock is a held lock on a directory.
type Lock struct {
	f *os.File
}

// HeldError is Acquire's error when the directory's lock is held, by
// another process or by another Lock of this one.
type HeldError struct {
	Dir string // the directory
	PID int    // the holder's pid; 0 when unknown
}

func (e *HeldError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("directory %s is locked by another process (lock file %s)", e.Dir, filepath.Join(e.Dir, FileName))
	}
	return fmt.Sprintf("directory %s is locked by process %d (lock file %s)", e.Dir, e.PID, filepath.Join(e.Dir, FileName))
}

// Acquire takes the lock on dir, which must exist, without waiting: it fails
// with a *HeldError when the lock is held, even by this process.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	f, err := openLocked(path)
	if err != nil {
		if isHeld(err) {
			return nil, &HeldError{Dir: dir, PID: readPID(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	// Record the holder. The pid is a courtesy to whoever is refused: the
	// lock itself is what excludes.
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Lock{f: f}, nil
}

// Close releases the lock. The file stays, empty: removing it would let a
// process that opened it just before lock a file no other process sees.
func (l *Lock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Truncate(0)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// readPID reads the holder's pid from the lock file; 0 when it has none
// (yet).
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
