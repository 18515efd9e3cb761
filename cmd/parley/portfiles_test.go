package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"parley/files"
	"parley/servicetest"
)

// TestPortBlobs: portBlobs copies the blobs of a node's files (a picture
// with its preview, an unattached note) into a blob store, checked; run
// again it copies nothing (resumable: what the target holds whole is
// left); a blob damaged in the source, or missing, fails it, naming the
// blob. The target here is a directory store; TestPortFilesS3 ports into
// versitygw through parley port itself.
func TestPortBlobs(t *testing.T) {
	ctx := context.Background()
	m := MustOpenMain(t)
	c, _ := mustSignUp(t, m.Addr(), "keeper")
	var r room
	c.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "kept"}, &r)
	pic := testPNG(t)
	_, img, _ := c.upload(r.ID, "photo.png", "image/png", pic)
	_, note, _ := c.upload(r.ID, "note.txt", "text/plain", []byte("a note"))
	if st := c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "look", "files": []string{img.ID}}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	db, src := sqliteFile(m.Config.Data), filepath.Join(m.Config.Data, "files")
	dst, err := files.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bc, err := portBlobs(ctx, db, src, dst)
	if err != nil || bc.Files != 2 || bc.Copied != 2 || bc.PreviewsCopied != 1 || bc.Had != 0 || bc.Bytes != int64(len(pic)+6) {
		t.Fatalf("portBlobs = %+v, %v; want 2 files and a preview copied", bc, err)
	}
	for id, want := range map[string][]byte{img.ID: pic, note.ID: []byte("a note")} {
		rc, err := dst.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, want) {
			t.Errorf("the target's %s = %d bytes, want the %d uploaded", id, len(got), len(want))
		}
	}
	if bc, err := portBlobs(ctx, db, src, dst); err != nil || bc.Copied != 0 || bc.Had != 3 {
		t.Errorf("portBlobs again = %+v, %v; want nothing copied, 3 there", bc, err)
	}

	// Damaged, then missing, in the source (and not yet in the target).
	dst2, _ := files.OpenDir(t.TempDir())
	path := filepath.Join(src, note.ID)
	os.WriteFile(path, []byte("a nOte"), 0o600)
	if _, err := portBlobs(ctx, db, src, dst2); err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), note.ID) {
		t.Errorf("portBlobs with a damaged blob: %v, want an error naming %s as damaged", err, note.ID)
	}
	os.Remove(path)
	if _, err := portBlobs(ctx, db, src, dst2); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("portBlobs with a missing blob: %v, want an error saying it is missing", err)
	}
}

// TestPortFilesS3: parley port of a stopped node with files into
// PostgreSQL and versitygw: a cluster node on them serves the file's
// bytes and preview; a port without --files-s3-endpoint is refused before
// it changes anything; --verify-only checks the blobs too.
func TestPortFilesS3(t *testing.T) {
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
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	p.cmd.Wait()

	_, stderr, code := portProcess(t, "--from", dir, "--to", env.store)
	if code == 0 || !strings.Contains(stderr, "--files-s3-endpoint") {
		t.Errorf("port of a node with files, no object store: exit %d, %q; want a refusal naming --files-s3-endpoint", code, stderr)
	}
	if n := pgInt(t, env.store, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`); n != 0 {
		t.Errorf("the refused port made %d tables", n)
	}
	s3 := []string{"--files-s3-endpoint", g.Endpoint, "--files-s3-bucket", "parley-port", "--files-s3-access-key", g.AccessKey, "--files-s3-secret-key", g.SecretKey}
	stdout, stderr, code := portProcess(t, append([]string{"--from", dir, "--to", env.store}, s3...)...)
	if code != 0 || !strings.Contains(stdout, "files: 1 (") || !strings.Contains(stdout, "1 copied (and 1 previews)") {
		t.Fatalf("parley port: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = portProcess(t, append([]string{"--from", dir, "--to", env.store, "--verify-only"}, s3...)...)
	if code != 0 || !strings.Contains(stdout, "the blobs of all 1 files are in the target") {
		t.Errorf("parley port --verify-only: exit %d\n%s\n%s", code, stdout, stderr)
	}
	node := startServeProcess(t, append([]string{"--data", t.TempDir(), "--store", env.store, "--broker", env.broker, "--redis", env.redis,
		"--redis-prefix", env.prefix, "--node-id", "ported-" + filepath.Base(dir)}, s3...)...)
	c.base = "http://" + node.addr
	if resp, body := c.fetch("/api/files/" + img.ID); resp.StatusCode != http.StatusOK || !bytes.Equal(body, pic) {
		t.Errorf("GET the file on the cluster node = %d, %d bytes; want the %d uploaded", resp.StatusCode, len(body), len(pic))
	}
	if resp, _ := c.fetch("/api/files/" + img.ID + "/preview"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET the preview on the cluster node = %d", resp.StatusCode)
	}
}
