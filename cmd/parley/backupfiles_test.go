package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBackupRestoreFiles: parley backup of a server process with files
// copies the blobs of the snapshot's files (a sent picture with its
// preview, an unattached upload; not the file of a message deleted
// before) to DEST.files, and parley restore brings them back: a server on
// the restored directory serves the same bytes. A backup whose blob is
// missing, or damaged, is refused by restore with an error that says so,
// and the data directory stays as it was.
func TestBackupRestoreFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	p := startServeProcess(t, "--data", dir, "--sync", "normal")
	c, _ := mustSignUp(t, p.addr, "keeper")
	var r room
	if st := c.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "kept"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	pic := testPNG(t)
	_, img, _ := c.upload(r.ID, "photo.png", "image/png", pic)
	_, note, _ := c.upload(r.ID, "note.txt", "text/plain", []byte("an unattached note"))
	_, gone, _ := c.upload(r.ID, "gone.txt", "text/plain", []byte("deleted before the backup"))
	if !img.Preview || note.ID == "" || gone.ID == "" {
		t.Fatalf("uploads = %+v %+v %+v", img, note, gone)
	}
	var kept, del message
	if st := c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "look", "files": []string{img.ID}}, &kept); st != http.StatusCreated {
		t.Fatalf("send with a file: %d", st)
	}
	if st := c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "oops", "files": []string{gone.ID}}, &del); st != http.StatusCreated {
		t.Fatalf("send with a file: %d", st)
	}
	if st := c.do("DELETE", "/api/rooms/"+r.ID+"/messages/"+strconv.FormatInt(del.Seq, 10), nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete the message: %d", st)
	}

	dest := filepath.Join(t.TempDir(), "parley-backup.db")
	out, _, err := runCLI("backup", "--data", dir, dest)
	if err != nil || !strings.Contains(out, "backed up 2 files ("+strconv.Itoa(len(pic)+len("an unattached note"))+" bytes)") {
		t.Fatalf("parley backup = %q, %v; want it to say 2 files", out, err)
	}
	want := []string{img.ID, img.ID + ".p", note.ID}
	slices.Sort(want)
	if got := names(t, dest+".files"); !slices.Equal(got, want) {
		t.Fatalf("DEST.files holds %v, want %v (the snapshot's files and preview only)", got, want)
	}

	// A node that keeps its files in S3: the backup holds their rows and
	// says the bytes stay in the bucket.
	s3dest := filepath.Join(t.TempDir(), "s3-backup.db")
	out, _, err = runCLI("backup", "--data", dir, "--files-s3-endpoint", "http://127.0.0.1:1", s3dest)
	if err != nil || !strings.Contains(out, "its 2 files") || !strings.Contains(out, "stay in the S3 bucket") {
		t.Errorf("parley backup --files-s3-endpoint = %q, %v; want it to say the 2 files stay in the bucket", out, err)
	}
	if _, err := os.Stat(s3dest + ".files"); !os.IsNotExist(err) {
		t.Errorf("parley backup --files-s3-endpoint made %s.files (%v)", s3dest, err)
	}

	// A blob missing, then one damaged: refused, nothing changed.
	blob := filepath.Join(dest+".files", img.ID)
	orig, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	for _, bad := range []struct {
		name, msg string
		break_    func()
	}{
		{"missing", "missing from", func() { os.Remove(blob) }},
		{"damaged", "damaged", func() { os.WriteFile(blob, append(bytes.Clone(orig[:len(orig)-1]), 0), 0o640) }},
	} {
		bad.break_()
		out, _, err := runCLI("restore", "--data", restored, dest)
		if err == nil || !strings.Contains(err.Error(), bad.msg) || !strings.Contains(err.Error(), "nothing was restored") {
			t.Errorf("restore of a backup with a %s blob = %q, %v; want an error saying %q", bad.name, out, err, bad.msg)
		}
		if st := dirState(t, restored); st != nil {
			t.Errorf("restore of a backup with a %s blob left %v", bad.name, st)
		}
	}
	if err := os.WriteFile(blob, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI("restore", "--data", restored, dest)
	if err != nil || !strings.Contains(out, "restored 2 files") {
		t.Fatalf("parley restore = %q, %v; want it to say 2 files", out, err)
	}
	// Restored again with --force over blobs gone bad in the data
	// directory (the reason to restore): a damaged one, and a preview
	// that is now a link to another file of the machine, are replaced by
	// the backup's, not kept because a blob of that name is there.
	// (Replaced, not written in place: the restored blobs are hard links
	// to the backup's.)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("not a preview"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(restored, "files", img.ID)
	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, make([]byte, len(pic)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bad + ".p"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, bad+".p"); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI("restore", "--data", restored, "--force", dest)
	if err != nil || !strings.Contains(out, "restored 2 files") || !strings.Contains(out, "2 damaged") {
		t.Fatalf("parley restore --force over damaged blobs = %q, %v; want it to say 2 files, 2 damaged ones replaced", out, err)
	}
	if got, err := os.ReadFile(bad); err != nil || !bytes.Equal(got, pic) {
		t.Errorf("the damaged blob after restore --force: %d bytes, %v; want the backup's %d", len(got), err, len(pic))
	}
	if fi, err := os.Lstat(bad + ".p"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the linked preview after restore --force: %v, %v; want a plain file", fi, err)
	}
	q := startServeProcess(t, "--data", restored, "--sync", "normal")
	rc := newClient(t, q.addr)
	var tok struct{ Token string }
	if st := rc.do("POST", "/api/tokens", map[string]string{"name": "keeper", "password": "correct horse"}, &tok); st != http.StatusCreated {
		t.Fatalf("log in on the restored node: %d", st)
	}
	rc.token = tok.Token
	for id, data := range map[string][]byte{img.ID: pic, note.ID: []byte("an unattached note")} {
		if resp, body := rc.fetch("/api/files/" + id); resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
			t.Errorf("GET /api/files/%s on the restored node = %d, %d bytes; want the %d bytes backed up", id, resp.StatusCode, len(body), len(data))
		}
	}
	if resp, _ := rc.fetch("/api/files/" + img.ID + "/preview"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET the preview on the restored node = %d, want 200", resp.StatusCode)
	}
}

// names lists the names in dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	for k := range dirState(t, dir) {
		got = append(got, k)
	}
	slices.Sort(got)
	return got
}
