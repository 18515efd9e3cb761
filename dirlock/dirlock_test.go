package dirlock

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestAcquire(t *testing.T) {
	dir := t.TempDir()
	a, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire(%q) = %v, want the lock", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, FileName)); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q (%v), want this pid %d", b, err, os.Getpid())
	}

	// A second lock, even in this process, is refused with the holder.
	b, err := Acquire(dir)
	var held *HeldError
	if !errors.As(err, &held) || held.PID != os.Getpid() || held.Dir != dir {
		t.Fatalf("second Acquire(%q) = %v, %v; want a HeldError naming pid %d", dir, b, err, os.Getpid())
	}
	for _, want := range []string{dir, strconv.Itoa(os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}

	if err := a.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	c, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Close = %v, want the lock", err)
	}
	c.Close()
}

func TestAcquireMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	l, err := Acquire(dir)
	var held *HeldError
	if err == nil || errors.As(err, &held) {
		t.Errorf("Acquire(%q) = %v, %v; want an error that is not HeldError", dir, l, err)
	}
}
