package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, target string, header map[string]string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

func TestHandlerServesPageAndAssets(t *testing.T) {
	h := Handler()
	page := get(t, h, "/", nil)
	html := body(t, page)
	if page.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d, want 200", page.StatusCode)
	}
	if got, want := page.Header.Get("Content-Type"), "text/html; charset=utf-8"; got != want {
		t.Errorf("GET / Content-Type = %q, want %q", got, want)
	}
	if got := page.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("GET / Cache-Control = %q, want no-cache", got)
	}
	if got := page.Header.Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") {
		t.Errorf("GET / Content-Security-Policy = %q, want script-src 'self'", got)
	}

	// The page names its assets by content hash.
	refs := regexp.MustCompile(`(?:src|href)="(/app\.(?:js|css)\?v=[0-9a-f]{16})"`).FindAllStringSubmatch(html, -1)
	if len(refs) != 2 {
		t.Fatalf("page references %d versioned assets, want app.js and app.css:\n%s", len(refs), html)
	}
	embedded := map[string]string{"/app.js": "dist/app.js", "/app.css": "static/app.css"}
	types := map[string]string{"/app.js": "text/javascript; charset=utf-8", "/app.css": "text/css; charset=utf-8"}
	for _, ref := range refs {
		url := ref[1]
		path := url[:strings.Index(url, "?")]
		res := get(t, h, url, nil)
		got := body(t, res)
		want, _ := files.ReadFile(embedded[path])
		if res.StatusCode != http.StatusOK || got != string(want) {
			t.Errorf("GET %s = %d with %d bytes, want 200 with the %d bytes of %s", url, res.StatusCode, len(got), len(want), embedded[path])
		}
		if ct := res.Header.Get("Content-Type"); ct != types[path] {
			t.Errorf("GET %s Content-Type = %q, want %q", url, ct, types[path])
		}
		if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("GET %s Cache-Control = %q, want immutable for the versioned URL", url, cc)
		}
		if cc := get(t, h, path, nil).Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s Cache-Control = %q, want no-cache without the version", path, cc)
		}
		etag := res.Header.Get("ETag")
		if res := get(t, h, path, map[string]string{"If-None-Match": etag}); res.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %s = %d, want 304", path, etag, res.StatusCode)
		}
	}
}

func TestHandlerNotFound(t *testing.T) {
	h := Handler()
	for _, path := range []string{"/nope", "/static/index.html", "/dist/app.js", "/web.go", "/api"} {
		if res := get(t, h, path, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, res.StatusCode)
		}
	}
}

func TestHandlerMethods(t *testing.T) {
	h := Handler()
	head := httptest.NewRecorder()
	h.ServeHTTP(head, httptest.NewRequest(http.MethodHead, "/", nil))
	if head.Code != http.StatusOK || head.Body.Len() != 0 {
		t.Errorf("HEAD / = %d with %d bytes, want 200 with none", head.Code, head.Body.Len())
	}
	post := httptest.NewRecorder()
	h.ServeHTTP(post, httptest.NewRequest(http.MethodPost, "/", nil))
	if post.Code != http.StatusMethodNotAllowed || post.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST / = %d, Allow %q; want 405, Allow \"GET, HEAD\"", post.Code, post.Header().Get("Allow"))
	}
}

// TestNoExternalURL checks that the page loads nothing from another origin:
// no absolute or protocol-relative URL in the page, the style sheet or the
// bundle.
func TestNoExternalURL(t *testing.T) {
	external := regexp.MustCompile(`(?i)(?:https?|wss?|ftp)://|(?:src|href|action)\s*=\s*["']?//|url\(\s*["']?//|@import`)
	for _, name := range []string{"static/index.html", "static/app.css", "dist/app.js"} {
		b, err := files.ReadFile(name)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		for _, loc := range external.FindAllIndex(b, -1) {
			from, to := max(0, loc[0]-40), min(len(b), loc[1]+40)
			t.Errorf("%s has an external reference at byte %d: %q", name, loc[0], b[from:to])
		}
	}
}
