package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"parley/servicetest"
)

type fileInfo struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	Preview bool   `json:"preview"`
}

// upload posts data as a file named name into room, checks the answer
// against rest/openapi.yaml and returns its status and file (or error).
func (c *client) upload(roomID, name, declared string, data []byte) (int, fileInfo, apiError) {
	c.t.Helper()
	req, _ := http.NewRequest("POST", c.base+"/api/rooms/"+roomID+"/files", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", declared)
	req.Header.Set("X-Filename", url.PathEscape(name))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("upload: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	checkAPIDoc(c.t, req, resp, body)
	var f fileInfo
	var e apiError
	if resp.StatusCode == http.StatusCreated {
		json.Unmarshal(body, &f)
	} else {
		json.Unmarshal(body, &e)
	}
	return resp.StatusCode, f, e
}

// fetch GETs path and returns the response with its body read.
func (c *client) fetch(path string) (*http.Response, []byte) {
	c.t.Helper()
	req, _ := http.NewRequest("GET", c.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		checkAPIDoc(c.t, req, resp, body)
	}
	return resp, body
}

func testPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 640, 480)))
	return b.Bytes()
}

// TestFilesEndToEnd: uploads, sends with files over REST and STOMP, the
// MESSAGE frames and history that carry them, downloads with their
// headers, and every refusal, through the real node.
func TestFilesEndToEnd(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.Files.MaxSize, c.Files.Quota = 100_000, 150_000 })
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	carol, _ := mustSignUp(t, m.Addr(), "carol")
	var r, other room
	alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "files"}, &r)
	bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil)
	carol.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "carol's"}, &other)

	sub := dialStomp(t, m, "websocket", bob.token)
	sub.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nreceipt:s\n\n\x00")
	sub.expect("RECEIPT", "receipt-id:s")

	pic := testPNG(t)
	st, img, _ := alice.upload(r.ID, "../holiday photo é.png", "application/octet-stream", pic)
	if st != http.StatusCreated || img.Name != "holiday photo é.png" || img.Type != "image/png" || img.Size != int64(len(pic)) || !img.Preview {
		t.Fatalf("upload png = %d %+v", st, img)
	}
	// The declared type is not trusted: HTML declared as an image is
	// kept as the HTML it is, and served as an attachment.
	st, page, _ := alice.upload(r.ID, "page.png", "image/png", []byte("<html><script>alert(1)</script></html>"))
	if st != http.StatusCreated || page.Type != "text/html; charset=utf-8" || page.Preview {
		t.Fatalf("upload html as png = %d %+v, want 201 text/html", st, page)
	}
	for _, tt := range []struct {
		name string
		c    *client
		room string
		data []byte
		want int
		code string
	}{
		{"too large", alice, r.ID, make([]byte, 100_001), 413, "too_large"},
		{"broken image", alice, r.ID, []byte("\x89PNG\r\n\x1a\nnot a png"), 400, "invalid"},
		{"empty", alice, r.ID, nil, 400, "invalid"},
		{"a direct room of others or an unknown room", alice, "nope", []byte("x"), 404, "not_found"},
		{"not a member", carol, r.ID, []byte("x"), 403, "forbidden"},
	} {
		if st, _, e := tt.c.upload(tt.room, "x", "text/plain", tt.data); st != tt.want || e.Error.Code != tt.code {
			t.Errorf("%s: upload = %d %+v, want %d %s", tt.name, st, e, tt.want, tt.code)
		}
	}

	// REST send with files.
	var sent message
	var sentFiles struct {
		Files []fileInfo `json:"files"`
	}
	if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "look", "files": []string{img.ID, page.ID}}, &sent); st != http.StatusCreated {
		t.Fatalf("send with files = %d", st)
	}
	f := sub.expect("MESSAGE", "seq:1")
	var frameFiles []fileInfo
	if err := json.Unmarshal(f.Get("files"), &frameFiles); err != nil || len(frameFiles) != 2 || frameFiles[0] != img || frameFiles[1] != page {
		t.Errorf("MESSAGE files header = %s (%v), want %+v %+v", f.Get("files"), err, img, page)
	}
	// Another room's file, one carried already, too many: refused.
	_, carols, _ := carol.upload(other.ID, "c.txt", "text/plain", []byte("carol"))
	for _, ids := range [][]string{{carols.ID}, {img.ID}, strings.Fields(strings.Repeat("a ", 11))} {
		var e apiError
		if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "x", "files": ids}, &e); st != 400 {
			t.Errorf("send with files %v = %d %+v, want 400", ids, st, e)
		}
	}

	// STOMP send with files; the MESSAGE frame carries them.
	_, txt, _ := bob.upload(r.ID, "notes.txt", "text/plain", []byte("line one\n"))
	sub.send("SEND\ndestination:/app/rooms." + r.ID + "\nfiles:" + txt.ID + "\nreceipt:r\n\n\x00")
	for range 2 { // the RECEIPT and bob's own copy, in either order
		f := sub.read()
		if f.Command.String() == "MESSAGE" {
			frameFiles = nil
			if json.Unmarshal(f.Get("files"), &frameFiles); len(frameFiles) != 1 || frameFiles[0] != txt || string(f.Get("seq")) != "2" {
				t.Errorf("MESSAGE of the STOMP send = %v, want seq 2 with %+v", f, txt)
			}
		}
	}
	// since-seq replays carry them too.
	replay := dialStomp(t, m, "websocket", alice.token)
	replay.send("SUBSCRIBE\nid:1\ndestination:/topic/rooms." + r.ID + "\nsince-seq:0\n\n\x00")
	if f := replay.expect("MESSAGE", "seq:1"); !bytes.Contains(f.Get("files"), []byte(img.ID)) {
		t.Errorf("replayed MESSAGE = %v, want its files", f)
	}
	// History carries them.
	var hist struct {
		Messages []struct {
			Seq   int64      `json:"seq"`
			Files []fileInfo `json:"files"`
		} `json:"messages"`
	}
	bob.do("GET", "/api/rooms/"+r.ID+"/messages?after=0", nil, &hist)
	if len(hist.Messages) != 2 || len(hist.Messages[0].Files) != 2 || len(hist.Messages[1].Files) != 1 {
		t.Errorf("history = %+v, want 2 messages with 2 and 1 files", hist)
	}
	_ = sentFiles

	// Downloads: members only, with safe headers.
	resp, body := bob.fetch("/api/files/" + img.ID)
	h := resp.Header
	if resp.StatusCode != 200 || !bytes.Equal(body, pic) || h.Get("Content-Type") != "image/png" ||
		!strings.HasPrefix(h.Get("Content-Disposition"), "inline") || h.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "sandbox") || !strings.HasPrefix(h.Get("Cache-Control"), "private") {
		t.Errorf("GET image = %d %v", resp.StatusCode, h)
	}
	resp, body = bob.fetch("/api/files/" + page.ID)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "page.png") || string(body) != "<html><script>alert(1)</script></html>" {
		t.Errorf("GET html = %d %v, want an attachment", resp.StatusCode, resp.Header)
	}
	resp, body = bob.fetch("/api/files/" + img.ID + "/preview")
	if cfg, format, err := image.DecodeConfig(bytes.NewReader(body)); resp.StatusCode != 200 || err != nil || format != "jpeg" || cfg.Width != 320 {
		t.Errorf("GET preview = %d %s %dx%d %v", resp.StatusCode, format, cfg.Width, cfg.Height, err)
	}
	for _, tt := range []struct {
		name string
		c    *client
		path string
	}{
		{"non-member", carol, "/api/files/" + img.ID},
		{"non-member's preview", carol, "/api/files/" + img.ID + "/preview"},
		{"unknown", bob, "/api/files/nope"},
		{"another room's", bob, "/api/files/" + carols.ID},
		{"no preview", bob, "/api/files/" + txt.ID + "/preview"},
	} {
		if resp, _ := tt.c.fetch(tt.path); resp.StatusCode != 404 {
			t.Errorf("%s: GET %s = %d, want 404", tt.name, tt.path, resp.StatusCode)
		}
	}

	// Chunked (no Content-Length): cut off at the limit all the same.
	req, _ := http.NewRequest("POST", alice.base+"/api/rooms/"+r.ID+"/files", io.MultiReader(bytes.NewReader(make([]byte, 100_001))))
	req.Header.Set("Authorization", "Bearer "+alice.token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 413 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("chunked upload over the limit = %v %v, want 413 JSON", resp, err)
	} else {
		resp.Body.Close()
	}
	// A STOMP SEND with a file it may not carry is refused with ERROR.
	bad := dialStomp(t, m, "websocket", alice.token)
	bad.send("SEND\ndestination:/app/rooms." + r.ID + "\nfiles:" + carols.ID + "\nreceipt:x\n\nhi\x00")
	bad.expect("ERROR", "code:invalid")

	// The quota (150,000 bytes): alice has img and page; two more files
	// of 60,000 bytes fit, a third does not.
	big := bytes.Repeat([]byte("a"), 60_000)
	for _, name := range []string{"2.txt", "3.txt"} {
		if st, _, e := alice.upload(r.ID, name, "text/plain", big); st != 201 {
			t.Fatalf("upload %s = %d %+v", name, st, e)
		}
	}
	if st, _, e := alice.upload(r.ID, "4.txt", "text/plain", big); st != 413 || e.Error.Code != "too_large" || !strings.Contains(e.Error.Message, "quota") {
		t.Errorf("over quota = %d %+v, want 413 too_large (quota)", st, e)
	}

	// Deleting the message deletes its files.
	if st := alice.do("DELETE", "/api/rooms/"+r.ID+"/messages/1", nil, nil); st != 204 {
		t.Fatalf("delete = %d", st)
	}
	if resp, _ := bob.fetch("/api/files/" + img.ID); resp.StatusCode != 404 {
		t.Errorf("GET the file of a deleted message = %d, want 404", resp.StatusCode)
	}
}

// TestFilesOff: --files-max-size 0 turns files off: 503 with a JSON error.
func TestFilesOff(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.Files.MaxSize = 0 })
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	var r room
	alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "x"}, &r)
	if st, _, e := alice.upload(r.ID, "x", "text/plain", []byte("x")); st != 503 || e.Error.Code != "unavailable" {
		t.Errorf("upload = %d %+v, want 503 unavailable", st, e)
	}
	var e apiError
	if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "x", "files": []string{"a"}}, &e); st != 503 {
		t.Errorf("send with files = %d %+v, want 503", st, e)
	}
}

// TestFilesCluster: two nodes share the PostgreSQL store and an S3
// bucket (a private versitygw): a file uploaded through one node is sent
// and downloaded through the other, and its MESSAGE reaches a subscriber
// of the other node.
func TestFilesCluster(t *testing.T) {
	env := needCluster(t)
	g := servicetest.StartVersityGW(t)
	s3 := func(c *Config) {
		c.Files.S3Endpoint, c.Files.S3Bucket, c.Files.S3AccessKey, c.Files.S3SecretKey = g.Endpoint, "parley-cluster", g.AccessKey, g.SecretKey
	}
	a := startNode(t, env, "a", s3, oneAddress)
	b := startNode(t, env, "b", s3, oneAddress)
	alice, _ := mustSignUp(t, a.Addr(), "alice")
	bobA, _ := mustSignUp(t, a.Addr(), "bob")
	bob := on(bobA, b)
	var r room
	alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "shared"}, &r)
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join on b = %d", st)
	}
	sub := subscribe(t, b, bob.token, r.ID, 0)

	pic := testPNG(t)
	st, img, e := alice.upload(r.ID, "a.png", "image/png", pic)
	if st != http.StatusCreated {
		t.Fatalf("upload on a = %d %+v", st, e)
	}
	// Not yet sent: only alice sees it, on either node.
	if resp, _ := bob.fetch("/api/files/" + img.ID); resp.StatusCode != 404 {
		t.Errorf("bob GETs the unattached file on b = %d, want 404", resp.StatusCode)
	}
	aliceB := on(alice, b)
	if st := aliceB.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "from a, sent on b", "files": []string{img.ID}}, nil); st != http.StatusCreated {
		t.Fatalf("send with the file on b = %d", st)
	}
	f := sub.expect("MESSAGE", "seq:1")
	if !bytes.Contains(f.Get("files"), []byte(img.ID)) {
		t.Errorf("MESSAGE on b = %v, want the file", f)
	}
	resp, body := bob.fetch("/api/files/" + img.ID)
	if resp.StatusCode != 200 || !bytes.Equal(body, pic) {
		t.Errorf("bob downloads on b = %d (%d bytes), want 200 with the %d bytes uploaded on a", resp.StatusCode, len(body), len(pic))
	}
	if resp, _ := bobA.fetch("/api/files/" + img.ID + "/preview"); resp.StatusCode != 200 {
		t.Errorf("bob's preview on a = %d", resp.StatusCode)
	}
	// Deleted on a: gone on b.
	if st := alice.do("DELETE", "/api/rooms/"+r.ID+"/messages/1", nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete = %d", st)
	}
	if resp, _ := bob.fetch("/api/files/" + img.ID); resp.StatusCode != 404 {
		t.Errorf("after the deletion, GET on b = %d, want 404", resp.StatusCode)
	}
}

// TestFilesClusterNeedsS3: a cluster node without --files-s3-endpoint
// keeps files off (each node's directory would be its own): 503.
func TestFilesClusterNeedsS3(t *testing.T) {
	env := needCluster(t)
	a := startNode(t, env, "a", oneAddress)
	alice, _ := mustSignUp(t, a.Addr(), "alice")
	var r room
	alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "x"}, &r)
	if st, _, e := alice.upload(r.ID, "x", "text/plain", []byte("x")); st != 503 || !strings.Contains(e.Error.Message, "not available") {
		t.Errorf("upload = %d %+v, want 503", st, e)
	}
}

// TestFilesInReply: a reply may carry files, over REST (reply_to with
// files) and STOMP (reply-to with files): the message is both, and its
// MESSAGE frame says both.
func TestFilesInReply(t *testing.T) {
	m := MustOpenMain(t)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	var r room
	alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "replies with files"}, &r)
	var root message
	if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "the plan"}, &root); st != http.StatusCreated {
		t.Fatalf("root = %d", st)
	}
	sub := dialStomp(t, m, "websocket", alice.token)
	sub.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nreceipt:s\n\n\x00")
	sub.expect("RECEIPT", "receipt-id:s")

	_, a, _ := alice.upload(r.ID, "a.txt", "text/plain", []byte("first draft"))
	var got struct {
		ReplyTo *struct{ Seq int64 } `json:"reply_to"`
		Files   []fileInfo           `json:"files"`
	}
	if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "draft", "reply_to": root.Seq, "files": []string{a.ID}}, &got); st != http.StatusCreated {
		t.Fatalf("reply with files = %d", st)
	}
	if got.ReplyTo == nil || got.ReplyTo.Seq != root.Seq || len(got.Files) != 1 || got.Files[0].ID != a.ID {
		t.Errorf("REST reply with files = %+v, want reply_to %d and file %s", got, root.Seq, a.ID)
	}
	f := sub.expect("MESSAGE", "seq:2")
	if string(f.Get("reply-to")) != fmt.Sprint(root.Seq) || !strings.Contains(string(f.Get("files")), a.ID) {
		t.Errorf("MESSAGE of the REST reply: reply-to %q files %q", string(f.Get("reply-to")), string(f.Get("files")))
	}

	_, b, _ := alice.upload(r.ID, "b.txt", "text/plain", []byte("second draft"))
	// Sent on a second connection: on the subscriber's own, its RECEIPT
	// and the MESSAGE may come in either order.
	snd := dialStomp(t, m, "websocket", alice.token)
	snd.send(fmt.Sprintf("SEND\ndestination:/app/rooms.%s\nreply-to:%d\nfiles:%s\nreceipt:r\n\nover STOMP\x00", r.ID, root.Seq, b.ID))
	snd.expect("RECEIPT", "receipt-id:r")
	f = sub.expect("MESSAGE", "seq:3")
	if string(f.Get("reply-to")) != fmt.Sprint(root.Seq) || !strings.Contains(string(f.Get("files")), b.ID) {
		t.Errorf("MESSAGE of the STOMP reply: reply-to %q files %q", string(f.Get("reply-to")), string(f.Get("files")))
	}
}
