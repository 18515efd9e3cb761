package rest

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"parley"
)

// TestEncodeHits: the hand-written search answer is what encoding/json
// writes.
func TestEncodeHits(t *testing.T) {
	at := time.Date(2026, 12, 1, 13, 0, 0, 123456000, time.UTC)
	m := parley.Message{ID: "m<1>", RoomID: "r", Seq: 7, SenderID: "u", SenderName: "ann", Body: "héllo \"there\"",
		ClientID: "c", SentAt: at, EditedAt: &at, Change: 3}
	gone := m
	gone.Body, gone.DeletedAt, gone.EditedAt = "", &at, nil
	room := parley.Room{ID: "r", Kind: parley.KindDirect, Title: "", Capacity: 2, MemberCount: 2, LastSeq: 9, LastChange: 3, LastActivityAt: at}
	for _, tc := range []struct {
		hits []searchHitView
		next string
	}{
		{nil, ""},
		{[]searchHitView{{Room: roomView{Room: room, Peer: &parley.User{ID: "p", Name: "bob"}}, Message: m}}, ""},
		{[]searchHitView{{Room: roomView{Room: room}, Message: m}, {Room: roomView{Room: room}, Message: gone}}, "next.1.r"},
	} {
		var cursor *string
		if tc.next != "" {
			cursor = &tc.next
		}
		hits := tc.hits
		if hits == nil {
			hits = []searchHitView{}
		}
		want, _ := json.Marshal(struct {
			Hits       []searchHitView `json:"hits"`
			NextCursor *string         `json:"next_cursor"`
		}{hits, cursor})
		if got := appendHits(nil, tc.hits, tc.next); !bytes.Equal(got, want) {
			t.Errorf("appendHits = %s\nwant         %s", got, want)
		}
	}
}
