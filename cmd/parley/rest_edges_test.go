package main

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestRESTWrongMethod: a known path with a method it does not take is
// 405 with Allow; an unknown path is still 404.
func TestRESTWrongMethod(t *testing.T) {
	m := MustOpenMain(t)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"PUT", "/api/me", 405, "DELETE, GET, HEAD"},
		{"GET", "/api/rooms", 405, "POST"},
		{"PATCH", "/api/rooms/r1/read", 405, "PUT"},
		{"PUT", "/api/tokens", 405, "DELETE, POST"},
		{"GET", "/api/nowhere", 404, ""},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+m.Addr()+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+alice.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		decodeBody(t, resp, &body)
		if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d Allow %q (%+v), want %d Allow %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), body, tc.status, tc.allow)
		}
		if tc.status == 405 && body.Error.Code != "method_not_allowed" {
			t.Errorf("%s %s: error code %q, want method_not_allowed", tc.method, tc.path, body.Error.Code)
		}
	}
}

// TestClientIDMismatch: a client_id sent again with another body is 409
// conflict over REST and ERROR code:conflict over STOMP, and stores
// nothing; sent again with the same body it is the idempotent repeat.
func TestClientIDMismatch(t *testing.T) {
	m := MustOpenMain(t)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "ids"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	path := "/api/rooms/" + r.ID + "/messages"
	if st := alice.do("POST", path, map[string]string{"body": "first", "client_id": "c1"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if st := alice.do("POST", path, map[string]string{"body": "second", "client_id": "c1"}, &e); st != http.StatusConflict || e.Error.Code != "conflict" {
		t.Errorf("same client_id, other body = %d %+v, want 409 conflict", st, e)
	}
	if st := alice.do("POST", path, map[string]string{"body": "first", "client_id": "c1"}, nil); st != http.StatusOK {
		t.Errorf("same client_id, same body = %d, want 200", st)
	}

	sc := dialStomp(t, m, "websocket", alice.token)
	sc.send("SEND\ndestination:/app/rooms." + r.ID + "\nclient-id:c1\nreceipt:r1\n\nthird\x00")
	sc.expect("ERROR", "code:conflict")

	var page struct{ Messages []message }
	if st := alice.do("GET", path+"?after=0", nil, &page); st != 200 || len(page.Messages) != 1 || page.Messages[0].Body != "first" {
		t.Errorf("history = %d %+v, want the one first message", st, page)
	}
}

// TestMarkReadPastLastSeq: a read mark past the room's last seq is taken
// as the last seq (docs/api.md, "A walk through the API"): nothing is unread,
// and the next message is.
func TestMarkReadPastLastSeq(t *testing.T) {
	m := MustOpenMain(t)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var r room
	alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "marks"}, &r)
	bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil)
	alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "one"}, nil)
	if st := bob.do("PUT", "/api/rooms/"+r.ID+"/read", map[string]int64{"seq": 99}, nil); st != http.StatusNoContent {
		t.Fatalf("mark read 99 = %d, want 204", st)
	}
	alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "two"}, nil)
	var list struct {
		Rooms []struct {
			Unread int64 `json:"unread"`
		} `json:"rooms"`
	}
	if bob.do("GET", "/api/me/rooms", nil, &list); len(list.Rooms) != 1 || list.Rooms[0].Unread != 1 {
		t.Errorf("after a mark past the end and one message, unread = %+v, want 1", list.Rooms)
	}
}

// decodeBody decodes resp's JSON body into out and closes it.
func decodeBody(t *testing.T, resp *http.Response, out any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Errorf("decode %s body: %v", resp.Request.URL.Path, err)
	}
}
