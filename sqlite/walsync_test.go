package sqlite

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The WAL's syncer syncs an open file and reports a failed sync (here, of
// a closed file) as an error, whether it goes through the scheduler (one
// P) or not.
func TestWALSync(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		f, err := os.Create(filepath.Join(t.TempDir(), "wal"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("frames")); err != nil {
			t.Fatal(err)
		}
		ws := newWALSyncer(f)
		if _, err := ws.sync(); err != nil {
			t.Errorf("GOMAXPROCS %d: sync of an open file: %v", procs, err)
		}
		f.Close()
		if _, err := ws.sync(); err == nil {
			t.Errorf("GOMAXPROCS %d: sync of a closed file reported no error", procs)
		}
	}
}

// On a slow disk the syncer goes through the scheduler, with one raw sync
// in rawProbeEvery to measure the disk again, and goes back to raw syncs
// once they are fast again.
func TestWALSyncerSlowDisk(t *testing.T) {
	var now time.Time
	rawTakes := 10 * time.Millisecond
	raws, scheds := 0, 0
	ws := &walSyncer{
		raw:   func(*os.File) error { raws++; now = now.Add(rawTakes); return nil },
		sched: func(*os.File) error { scheds++; now = now.Add(rawTakes); return nil },
		rawOK: func() bool { return true },
		now:   func() time.Time { return now },
	}
	for range 2 {
		ws.sync()
	}
	if raws != 2 || scheds != 0 {
		t.Fatalf("first syncs: %d raw, %d scheduled; want 2 raw (nothing measured yet)", raws, scheds)
	}
	raws, scheds = 0, 0
	for range 10 * rawProbeEvery {
		ws.sync()
	}
	if raws != 10 || scheds != 10*(rawProbeEvery-1) {
		t.Errorf("slow disk: %d raw, %d scheduled of %d syncs; want one raw in %d", raws, scheds, 10*rawProbeEvery, rawProbeEvery)
	}
	if ws.fast() {
		t.Error("slow disk: fast() = true, want the flusher to sync beside the writer")
	}
	rawTakes = 100 * time.Microsecond // the disk is fast again
	for range 40 * rawProbeEvery {
		ws.sync()
	}
	raws, scheds = 0, 0
	for range 100 {
		ws.sync()
	}
	if raws != 100 {
		t.Errorf("fast disk again: %d raw, %d scheduled of 100 syncs; want all raw", raws, scheds)
	}
	if !ws.fast() {
		t.Error("fast disk again: fast() = false, want the writer to sync its own commits")
	}

	// With one P no sync is raw, fast disk or not.
	ws.rawOK = func() bool { return false }
	raws, scheds = 0, 0
	for range 100 {
		ws.sync()
	}
	if raws != 0 {
		t.Errorf("one P: %d raw syncs, want none", raws)
	}
}
