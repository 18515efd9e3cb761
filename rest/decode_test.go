package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDecodeSurrogates: JSON that escapes half a UTF-16 surrogate pair
// would be stored as U+FFFD, so it is refused; whole pairs, an escaped
// backslash before "u" and an escaped U+FFFD are what they say.
func TestDecodeSurrogates(t *testing.T) {
	e := newEnv(t, nil)
	alice := e.mustSignUp("alice")
	room := e.mustCreateRoom(alice, "general")
	for _, tt := range []struct {
		name string
		json string // the value of "body"
		want string // stored body; "" for 400 invalid
	}{
		{"lone high half", `"\ud800"`, ""},
		{"lone high half, upper case", `"a\uD83Db"`, ""},
		{"lone low half", `"\udc00"`, ""},
		{"high half then a letter", `"\ud800a"`, ""},
		{"high half then an escaped letter", `"\ud800\u0041"`, ""},
		{"two high halves", `"\ud800\ud800"`, ""},
		{"pair in the wrong order", `"\ude00\ud83d"`, ""},
		{"high half at the end of the text", `"ok \ud83d"`, ""},
		{"a whole pair", `"\ud83d\ude00"`, "😀"},
		{"a whole pair, upper case", `"\uD83D\uDE00!"`, "😀!"},
		{"an escaped backslash before u", `"\\ud800"`, `\ud800`},
		{"an escaped U+FFFD", `"\ufffd"`, "\ufffd"},
		{"a plain escape", `"\u00e9\n"`, "é\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/api/rooms/"+room.ID+"/messages", bytes.NewReader([]byte(`{"body":`+tt.json+`}`)))
			req.Header.Set("Authorization", "Bearer "+alice)
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			var got struct {
				Body  string
				Error struct{ Code string }
			}
			json.Unmarshal(rec.Body.Bytes(), &got)
			switch {
			case tt.want == "" && (rec.Code != http.StatusBadRequest || got.Error.Code != "invalid"):
				t.Errorf("send %s = %d %s, want 400 invalid", tt.json, rec.Code, rec.Body)
			case tt.want != "" && (rec.Code != http.StatusCreated || got.Body != tt.want):
				t.Errorf("send %s = %d %s, want 201 with body %q", tt.json, rec.Code, rec.Body, tt.want)
			}
		})
	}
}
