package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"parley"
	"parley/chat"
)

// BenchmarkServeStack serves the hot reads of scripts/bench-rest.sh (the
// room list of a member of 20 rooms, the newest history page of 50 and an
// older one) through the read path cmd/parley wires: rest over chat over
// history over cache over SQLite (openStack). It measures what Parley adds per
// request in its own code, without net/http's reading and writing (the
// response writer only counts bytes): in-process and allocation-exact, so
// that a change of a few percent shows with benchstat where the loopback
// comparison's noise hides it.
func BenchmarkServeStack(b *testing.B) {
	ctx := context.Background()
	svc, h := openStack(b)
	u, tok := signUp(b, svc, "bench")
	var hist parley.Room
	for i := range 20 {
		r, _, err := svc.CreateRoom(ctx, u, chat.NewRoom{Kind: parley.KindGroup, Title: fmt.Sprintf("Room number %d of the bench", i+1)})
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			hist = r
		}
		if _, _, err := svc.Send(ctx, u, r.ID, fmt.Sprintf("The last message of room %d, about as long as a chat line is.", i+1), fmt.Sprintf("last-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	for i := 2; i <= 400; i++ {
		if _, _, err := svc.Send(ctx, u, hist.ID, fmt.Sprintf("Message %d of the history room, with a few words in it.", i), fmt.Sprintf("m-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	for _, bb := range []struct{ name, path string }{
		{"rooms", "/api/me/rooms"},
		{"newest", "/api/rooms/" + hist.ID + "/messages?limit=50"},
		{"older", "/api/rooms/" + hist.ID + "/messages?limit=50&before=101"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", bb.path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := &countingWriter{}
			b.ReportAllocs()
			for b.Loop() {
				w.reset()
				h.ServeHTTP(w, req)
				if w.code != http.StatusOK {
					b.Fatalf("%s = %d", bb.path, w.code)
				}
			}
		})
	}
}

// countingWriter is a ResponseWriter that keeps the status and counts the
// body, with a fresh header map per request as net/http's.
type countingWriter struct {
	h     http.Header
	code  int
	bytes int
}

func (w *countingWriter) reset()               { w.h, w.code, w.bytes = http.Header{}, 0, 0 }
func (w *countingWriter) Header() http.Header  { return w.h }
func (w *countingWriter) WriteHeader(code int) { w.code = code }
func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.bytes += len(p)
	return len(p), nil
}
