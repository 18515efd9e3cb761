package rest_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"parley"
	"parley/chat"
)

// TestMemoFollowsExcerpts: over the real read path, a page that holds a
// reply but not its root changes when the root is edited (the reply's
// excerpt) or gets a reaction of the caller's (me), though the reply's
// own change number does not move: the memo must not answer with the
// page encoded before, nor with another caller's.
func TestMemoFollowsExcerpts(t *testing.T) {
	ctx := context.Background()
	svc, h := openStack(t)
	ann, tokA := signUp(t, svc, "ann")
	bob, tokB := signUp(t, svc, "bob")
	room, _, err := svc.CreateRoom(ctx, ann, chat.NewRoom{Kind: parley.KindGroup, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	must(t)(svc.Join(ctx, bob, room.ID))
	must(t)(svc.Send(ctx, ann, room.ID, "the root", ""))
	for i := range 20 {
		must(t)(svc.Send(ctx, ann, room.ID, fmt.Sprint("filler ", i), ""))
	}
	reply, _, err := svc.SendReply(ctx, bob, room.ID, "a reply", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	get := func(tok string) string {
		req := httptest.NewRequest("GET", "/api/rooms/"+room.ID+"/messages?limit=5", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Body.String()
	}
	for range 2 { // the second read is the memo's
		if b := get(tokA); !strings.Contains(b, `"excerpt":"the root"`) {
			t.Fatalf("page = %s, want the reply quoting the root", b)
		}
	}
	must(t)(svc.EditMessage(ctx, ann, room.ID, 1, "the root, edited", ""))
	if b := get(tokA); !strings.Contains(b, `"excerpt":"the root, edited"`) {
		t.Errorf("page after the root's edit = %s, want the new excerpt", b)
	}
	must(t)(svc.React(ctx, bob, room.ID, reply.Seq, "👍", true))
	if b := get(tokB); !strings.Contains(b, `"reactions":[{"emoji":"👍","count":1,"me":true}]`) {
		t.Errorf("bob's page = %s, want his 👍 with me true", b)
	}
	if b := get(tokA); !strings.Contains(b, `"reactions":[{"emoji":"👍","count":1,"me":false}]`) {
		t.Errorf("ann's page = %s, want bob's 👍 with me false", b)
	}
	if b := get(tokB); !strings.Contains(b, `"me":true`) {
		t.Errorf("bob's page again = %s, want me true", b)
	}
}
