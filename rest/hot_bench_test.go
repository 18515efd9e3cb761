package rest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHotReads serves the room list of a member of 20 rooms and a
// history page of 50 messages through the Handler (over the fake chat
// service, whose own cost is part of the figure): the per-request cost
// of the REST layer, allocations included. scripts/bench-rest.sh measures
// the same over loopback against a bare net/http handler.
func BenchmarkHotReads(b *testing.B) {
	e := newEnv(&testing.T{}, nil)
	tok := e.mustSignUp("ann")
	var room struct{ ID string }
	for i := range 20 {
		e.mustExpect(e.do("POST", "/api/rooms", tok, map[string]any{"kind": "group", "title": fmt.Sprintf("Room number %d of the bench", i)}), "create", http.StatusCreated, &room)
		e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/messages", tok, map[string]any{"body": "The last message of the room, about as long as a chat line is."}), "send", http.StatusCreated, nil)
	}
	for i := range 100 {
		e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/messages", tok, map[string]any{"body": fmt.Sprintf("Message %d of the history room, with a few words in it.", i)}), "send", http.StatusCreated, nil)
	}
	for _, bb := range []struct{ name, path string }{
		{"rooms", "/api/me/rooms"},
		{"page", "/api/rooms/" + room.ID + "/messages?limit=50"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", bb.path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s = %d %s", bb.path, rec.Code, rec.Body)
				}
			}
		})
	}
}
