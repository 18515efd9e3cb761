package parleytest

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

// SQLiteFiles are the suffixes of the files of a SQLite database in WAL
// mode: the database itself, its WAL and its shared-memory index.
var SQLiteFiles = []string{"", "-wal", "-shm"}

// FilesHolding returns "file: word" for each word that a file path+suffix
// (one per suffix; a missing file holds nothing) holds, for the tests that
// deleted text leaves the disk. It looks for a word's last 16 bytes: FTS5
// stores a term after the prefix it shares with the term before it.
func FilesHolding(path string, suffixes []string, words ...string) []string {
	var in []string
	for _, suf := range suffixes {
		data, err := os.ReadFile(path + suf)
		if err != nil {
			continue
		}
		for _, w := range words {
			if bytes.Contains(data, []byte(w[len(w)-16:])) {
				in = append(in, filepath.Base(path+suf)+": "+w)
			}
		}
	}
	return in
}

// RandomWord returns 24 random lowercase letters: a word no other test
// writes, which a full-text index keeps as it is.
func RandomWord(t testing.TB) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'a' + b[i]%26
	}
	return string(b)
}
