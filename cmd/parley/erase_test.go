package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"parley/parleytest"
	"parley/sqlite"
)

// TestDeletedTextLeavesDisk: a `parley serve` process on SQLite is sent a
// message holding a word no other test writes and another one that is
// then edited; after the DELETE and the PATCH, neither old text is in
// parley.db, parley.db-wal or parley.db-shm once sqlite.EraseBound has
// passed (polled for, up to 10 s on a loaded machine), nor after a clean
// shutdown (SIGTERM).
func TestDeletedTextLeavesDisk(t *testing.T) {
	data := t.TempDir()
	p := startServeProcess(t, "--data", data, "--sync", "normal", "--rest-send-rate", "0")
	alice, _ := mustSignUp(t, p.addr, "alice")
	var g room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "g"}, &g); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	msgs := "/api/rooms/" + g.ID + "/messages"
	send := func(body string) message {
		var m message
		if st := alice.do("POST", msgs, map[string]string{"body": body}, &m); st != http.StatusCreated {
			t.Fatalf("send %q: %d", body, st)
		}
		return m
	}
	for i := range 100 {
		send(fmt.Sprintf("note %d about apples", i))
	}
	deleted, edited := parleytest.RandomWord(t), parleytest.RandomWord(t)
	del := send("please forget " + deleted)
	ed := send("first draft " + edited)
	for i := range 20 {
		send(fmt.Sprintf("later note %d", i))
	}
	db := filepath.Join(data, "parley.db")
	words := []string{deleted, edited}
	holding := func() []string { return parleytest.FilesHolding(db, parleytest.SQLiteFiles, words...) }
	parleytest.Eventually(t, 10*time.Second, func() bool { return len(holding()) == 2*len(words) },
		"the messages are not in the database and its WAL: %v", holding())

	if st := alice.do("DELETE", fmt.Sprintf("%s/%d", msgs, del.Seq), nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if st := alice.do("PATCH", fmt.Sprintf("%s/%d", msgs, ed.Seq), map[string]string{"body": "second draft"}, nil); st != http.StatusOK {
		t.Fatalf("edit: %d", st)
	}
	start := time.Now()
	if !parleytest.Poll(10*time.Second, func() bool { return len(holding()) == 0 }) {
		t.Errorf("10 s after the DELETE and the PATCH, the old text is in %v", holding())
	} else {
		t.Logf("old text gone from the files %v after the PATCH (bound %v)", time.Since(start), sqlite.EraseBound)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("parley serve after SIGTERM: %v\n%s", err, p.lines())
	}
	if in := holding(); len(in) > 0 {
		t.Errorf("after a clean shutdown, the old text is in %v", in)
	}
}
