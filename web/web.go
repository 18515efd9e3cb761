package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

//go:embed static/index.html static/app.css dist/app.js
var files embed.FS

// csp allows scripts, styles, images and connections (fetch, WebSocket)
// from this origin only; no inline script or style. Images may also be
// blob: URLs: the page fetches files with its token and shows them from
// blobs (src/files.js, docs/files.md).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// asset is one file the handler serves.
type asset struct {
	body        []byte
	contentType string
	etag        string // strong ETag: a prefix of the SHA-256 of body
	version     string // the ?v= value of its versioned URL
}

func newAsset(body []byte, contentType string) *asset {
	sum := sha256.Sum256(body)
	v := hex.EncodeToString(sum[:8])
	return &asset{body: body, contentType: contentType, etag: `"` + v + `"`, version: v}
}

// Handler returns the handler of the client's pages, to be mounted at "/":
// GET / (the page), /app.js, /app.css; anything else is 404.
func Handler() http.Handler {
	read := func(name string) []byte {
		b, err := files.ReadFile(name)
		if err != nil {
			panic("web: embedded file missing: " + name) // a build error, not a runtime one
		}
		return b
	}
	js := newAsset(read("dist/app.js"), "text/javascript; charset=utf-8")
	css := newAsset(read("static/app.css"), "text/css; charset=utf-8")
	page := string(read("static/index.html"))
	page = strings.Replace(page, `src="/app.js"`, `src="/app.js?v=`+js.version+`"`, 1)
	page = strings.Replace(page, `href="/app.css"`, `href="/app.css?v=`+css.version+`"`, 1)
	index := newAsset([]byte(page), "text/html; charset=utf-8")

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a *asset
		switch r.URL.Path {
		case "/", "/index.html":
			a = index
		case "/app.js":
			a = js
		case "/app.css":
			a = css
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if a == nil {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", a.contentType)
		h.Set("ETag", a.etag)
		switch {
		case a == index:
			h.Set("Cache-Control", "no-cache")
			h.Set("Content-Security-Policy", csp)
			h.Set("X-Frame-Options", "DENY")
		case r.URL.Query().Get("v") == a.version:
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		default:
			h.Set("Cache-Control", "no-cache")
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	})
}
