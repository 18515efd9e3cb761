package sqlite

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// walSync syncs an open file and reports a failed sync (here, of a closed
// file) as an error, whether it goes through the scheduler (one P) or not.
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
		if err := walSync(f); err != nil {
			t.Errorf("GOMAXPROCS %d: walSync of an open file: %v", procs, err)
		}
		f.Close()
		if err := walSync(f); err == nil {
			t.Errorf("GOMAXPROCS %d: walSync of a closed file reported no error", procs)
		}
	}
}
