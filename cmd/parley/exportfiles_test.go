package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"parley/servicetest"
)

// TestExportImportFiles: parley export --files-dir of a server process
// with files writes the rows and, beside them, the bytes (each file and
// its preview); parley import --files-dir into a new data directory
// refuses a directory whose blob is missing, or does not match its
// record, before writing anything, and with the right one a server on
// the new directory serves the same bytes. Without --files-dir the
// export carries the rows alone.
func TestExportImportFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	p := startServeProcess(t, "--data", dir)
	c, _ := mustSignUp(t, p.addr, "keeper")
	var r room
	c.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "kept"}, &r)
	pic := testPNG(t)
	_, img, _ := c.upload(r.ID, "photo.png", "image/png", pic)
	_, note, _ := c.upload(r.ID, "note.txt", "text/plain", []byte("a note"))
	if st := c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "look", "files": []string{img.ID}}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	stopServe(t, p)

	out := t.TempDir()
	file, blobs := filepath.Join(out, "export.jsonl"), filepath.Join(out, "blobs")
	if _, errs, err := runCLI("export", "--data", dir, "--with-secrets", "-o", file, "--files-dir", blobs); err != nil || !strings.Contains(errs, "2 files") {
		t.Fatalf("parley export --files-dir = %q, %v", errs, err)
	}
	if got := names(t, blobs); len(got) != 3 {
		t.Fatalf("--files-dir holds %v, want the 2 files and the preview", got)
	}
	data, _ := os.ReadFile(file)
	if !strings.Contains(string(data), `"type":"file"`) || !strings.Contains(string(data), `"files":[{"id":"`+img.ID) {
		t.Errorf("the export holds no file records or message file list:\n%s", data)
	}

	// A blob missing, then one that does not match its record: refused,
	// nothing written.
	moved := filepath.Join(t.TempDir(), "moved")
	path := filepath.Join(blobs, note.ID)
	for _, bad := range []struct{ name, msg string }{{"missing", "missing from"}, {"changed", "damaged"}} {
		if bad.name == "missing" {
			os.Remove(path)
		} else {
			os.WriteFile(path, []byte("a nOte"), 0o600)
		}
		out, _, err := runCLI("import", "--data", moved, "--files-dir", blobs, file)
		if err == nil || !strings.Contains(err.Error(), bad.msg) || !strings.Contains(err.Error(), "nothing was imported") {
			t.Errorf("import with a %s blob = %q, %v; want an error saying %q", bad.name, out, err, bad.msg)
		}
		if st := dirState(t, moved); st != nil {
			t.Errorf("import with a %s blob left %v", bad.name, st)
		}
	}
	os.WriteFile(path, []byte("a note"), 0o600)
	res, _, err := runCLI("import", "--data", moved, "--files-dir", blobs, file)
	if err != nil || !strings.Contains(res, "2 files written") || !strings.Contains(res, "put 3 blobs") {
		t.Fatalf("parley import --files-dir = %q, %v", res, err)
	}
	q := startServeProcess(t, "--data", moved)
	c.base = "http://" + q.addr
	for id, want := range map[string][]byte{img.ID: pic, note.ID: []byte("a note")} {
		if resp, body := c.fetch("/api/files/" + id); resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
			t.Errorf("GET /api/files/%s after the import = %d, %d bytes; want the %d exported", id, resp.StatusCode, len(body), len(want))
		}
	}
	if resp, _ := c.fetch("/api/files/" + img.ID + "/preview"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET the preview after the import = %d", resp.StatusCode)
	}
}

// TestExportImportFilesPostgres: a SQLite node's export with its files'
// bytes, imported into PostgreSQL with --files-dir and the cluster's
// --files-s3-* (versitygw): a cluster node serves the file; parley export
// --files-dir of the PostgreSQL store reads the bytes back from the
// bucket; without --files-s3-endpoint both refuse --files-dir with
// PostgreSQL.
func TestExportImportFilesPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	env := needCluster(t)
	g := servicetest.StartVersityGW(t)
	dir := t.TempDir()
	p := startServeProcess(t, "--data", dir)
	c, _ := mustSignUp(t, p.addr, "keeper")
	var r room
	c.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "kept"}, &r)
	pic := testPNG(t)
	_, img, _ := c.upload(r.ID, "photo.png", "image/png", pic)
	if st := c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "look", "files": []string{img.ID}}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	stopServe(t, p)
	out := t.TempDir()
	file, blobs := filepath.Join(out, "export.jsonl"), filepath.Join(out, "blobs")
	if _, errs, err := runCLI("export", "--data", dir, "--with-secrets", "-o", file, "--files-dir", blobs); err != nil {
		t.Fatalf("parley export --files-dir = %q, %v", errs, err)
	}
	s3 := []string{"--files-s3-endpoint", g.Endpoint, "--files-s3-bucket", "parley-import", "--files-s3-access-key", g.AccessKey, "--files-s3-secret-key", g.SecretKey}
	imp := []string{"import", "--store", env.store, "--no-redis", "--files-dir", blobs}
	if _, _, err := runCLI(append(imp, file)...); err == nil || !strings.Contains(err.Error(), "--files-s3-endpoint") {
		t.Errorf("import --files-dir into PostgreSQL without the bucket: %v, want a refusal naming --files-s3-endpoint", err)
	}
	if res, _, err := runCLI(append(append(imp, s3...), file)...); err != nil || !strings.Contains(res, "1 files written") || !strings.Contains(res, "put 2 blobs") {
		t.Fatalf("import --files-dir into PostgreSQL = %q, %v", res, err)
	}
	node := startServeProcess(t, append([]string{"--data", t.TempDir(), "--store", env.store, "--broker", env.broker, "--redis", env.redis,
		"--redis-prefix", env.prefix, "--node-id", "import-" + filepath.Base(dir)}, s3...)...)
	c.base = "http://" + node.addr
	if resp, body := c.fetch("/api/files/" + img.ID); resp.StatusCode != http.StatusOK || !bytes.Equal(body, pic) {
		t.Errorf("GET the file on the cluster node = %d, %d bytes; want the %d exported", resp.StatusCode, len(body), len(pic))
	}
	back := filepath.Join(out, "back")
	if _, errs, err := runCLI(append([]string{"export", "--store", env.store, "-o", filepath.Join(out, "back.jsonl"), "--files-dir", back}, s3...)...); err != nil {
		t.Fatalf("parley export --files-dir of PostgreSQL = %q, %v", errs, err)
	}
	if got, err := os.ReadFile(filepath.Join(back, img.ID)); err != nil || !bytes.Equal(got, pic) {
		t.Errorf("the file's bytes exported from the bucket: %d bytes, %v; want the %d uploaded", len(got), err, len(pic))
	}
}
