package rest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"parley"
)

// peopleEnv is a group room of an owner, an admin and two members, a
// direct room of the owner and a peer, and an outsider, over the fake.
type peopleEnv struct {
	*env
	tok           map[string]string // by name
	id            map[string]string // user ids by name
	group, direct string
}

func newPeopleEnv(t *testing.T) *peopleEnv {
	t.Helper()
	p := &peopleEnv{env: newEnv(t, nil), tok: map[string]string{}, id: map[string]string{}}
	for _, name := range []string{"owner", "admin", "member", "member2", "outsider", "peer"} {
		p.tok[name] = p.mustSignUp(name)
		var me struct{ ID string }
		p.mustExpect(p.do("GET", "/api/me", p.tok[name], nil), "me", http.StatusOK, &me)
		p.id[name] = me.ID
	}
	var room struct{ ID string }
	p.mustExpect(p.do("POST", "/api/rooms", p.tok["owner"], map[string]any{"kind": "group", "title": "g"}), "create", http.StatusCreated, &room)
	p.group = room.ID
	for _, name := range []string{"admin", "member", "member2"} {
		p.mustExpect(p.do("POST", "/api/rooms/"+p.group+"/members", p.tok[name], nil), "join", http.StatusCreated, nil)
	}
	p.mustExpect(p.do("PUT", "/api/rooms/"+p.group+"/members/"+p.id["admin"], p.tok["owner"], map[string]string{"role": "admin"}), "make admin", http.StatusOK, nil)
	p.mustExpect(p.do("POST", "/api/rooms", p.tok["owner"], map[string]any{"kind": "direct", "peer": p.id["peer"]}), "direct", http.StatusCreated, &room)
	p.direct = room.ID
	return p
}

// keys returns the sorted keys of a JSON object.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestPeopleRoutes runs every people route as owner, admin, member and
// outsider of a group room, and as the peer of a direct room, on a fresh
// room each, and checks the status.
func TestPeopleRoutes(t *testing.T) {
	callers := []string{"owner", "admin", "member", "outsider", "peer"}
	routes := []struct {
		name, method, path string // path: %r the room, %u member2's id (the owner's in the direct room)
		body               any
		want               []int // by caller
	}{
		{"members", "GET", "/api/rooms/%r/members", nil, []int{200, 200, 200, 404, 200}},
		{"update room", "PATCH", "/api/rooms/%r", map[string]any{"title": "new"}, []int{200, 200, 403, 404, 403}},
		{"set role", "PUT", "/api/rooms/%r/members/%u", map[string]string{"role": "admin"}, []int{200, 403, 403, 404, 403}},
		{"remove", "DELETE", "/api/rooms/%r/members/%u", nil, []int{204, 204, 403, 404, 403}},
		{"ban", "DELETE", "/api/rooms/%r/members/%u?ban=true", nil, []int{204, 204, 403, 404, 403}},
		{"unban", "DELETE", "/api/rooms/%r/bans/%u", nil, []int{204, 204, 403, 404, 403}},
		{"bans", "GET", "/api/rooms/%r/bans", nil, []int{200, 200, 403, 404, 403}},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			for i, who := range callers {
				p := newPeopleEnv(t)
				room, target := p.group, p.id["member2"]
				if who == "peer" {
					room, target = p.direct, p.id["owner"]
				}
				path := strings.NewReplacer("%r", room, "%u", target).Replace(rt.path)
				rec := p.do(rt.method, path, p.tok[who], rt.body)
				if rec.Code != rt.want[i] {
					t.Errorf("%s %s as %s = %d %s, want %d", rt.method, rt.path, who, rec.Code, rec.Body, rt.want[i])
				}
				if rec.Code >= 400 {
					var body errorBody
					if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code == "" || body.Error.Message == "" {
						t.Errorf("%s as %s: error body %s, want {\"error\":{\"code\",\"message\"}}", rt.name, who, rec.Body)
					}
				}
			}
		})
	}
}

// TestPeopleShapes: the JSON of each people route is design §3a's.
func TestPeopleShapes(t *testing.T) {
	p := newPeopleEnv(t)
	var list struct {
		Members    []json.RawMessage `json:"members"`
		NextCursor *string           `json:"next_cursor"`
	}
	rec := p.do("GET", "/api/rooms/"+p.group+"/members?limit=3", p.tok["member"], nil)
	p.mustExpect(rec, "members", http.StatusOK, &list)
	if got := keys(t, rec.Body.Bytes()); !slices.Equal(got, []string{"members", "next_cursor"}) {
		t.Errorf("members response keys = %v", got)
	}
	if len(list.Members) != 3 || list.NextCursor == nil {
		t.Fatalf("members page = %d, next %v; want 3 and a cursor", len(list.Members), list.NextCursor)
	}
	if got, want := keys(t, list.Members[0]), []string{"joined_at", "last_seen_at", "online", "read_seq", "role", "user"}; !slices.Equal(got, want) {
		t.Errorf("member keys = %v, want %v", got, want)
	}
	var first struct {
		User       map[string]any `json:"user"`
		Role       string         `json:"role"`
		LastSeenAt *string        `json:"last_seen_at"`
	}
	json.Unmarshal(list.Members[0], &first)
	if first.User["id"] != p.id["owner"] || first.User["name"] != "owner" || len(first.User) != 2 || first.Role != "owner" || first.LastSeenAt != nil {
		t.Errorf("first member = %+v, want the owner, {id,name}, last_seen_at null", first)
	}
	rec = p.do("GET", "/api/rooms/"+p.group+"/members?limit=3&cursor="+*list.NextCursor, p.tok["member"], nil)
	p.mustExpect(rec, "members page 2", http.StatusOK, &list)
	if len(list.Members) != 1 || list.NextCursor != nil {
		t.Errorf("members page 2 = %d, next %v; want 1 and null", len(list.Members), list.NextCursor)
	}

	rec = p.do("PATCH", "/api/rooms/"+p.group, p.tok["admin"], map[string]any{"capacity": 10})
	var room map[string]any
	p.mustExpect(rec, "patch", http.StatusOK, &room)
	if room["capacity"] != 10.0 || room["title"] != "g" || room["id"] != p.group || room["member_count"] != 4.0 {
		t.Errorf("PATCH = %v, want the room with capacity 10", room)
	}
	// A retention of the room's own: shown in the room; bounded; not a
	// plain member's to set.
	rec = p.do("PATCH", "/api/rooms/"+p.group, p.tok["owner"], map[string]any{"retention_seconds": 86400})
	p.mustExpect(rec, "patch retention", http.StatusOK, &room)
	if room["retention_seconds"] != 86400.0 || room["capacity"] != 10.0 {
		t.Errorf("PATCH retention_seconds = %v, want the room with retention_seconds 86400, capacity kept", room)
	}
	p.mustExpect(p.do("PATCH", "/api/rooms/"+p.group, p.tok["member"], map[string]any{"retention_seconds": 0}),
		"patch retention by a member", http.StatusForbidden, nil)
	for _, bad := range []any{-1, parley.MaxRetentionSeconds + 1, "1d"} {
		p.mustExpect(p.do("PATCH", "/api/rooms/"+p.group, p.tok["owner"], map[string]any{"retention_seconds": bad}),
			fmt.Sprintf("patch retention %v", bad), http.StatusBadRequest, nil)
	}
	rec = p.do("PUT", "/api/rooms/"+p.group+"/members/"+p.id["member"], p.tok["owner"], map[string]string{"role": "admin"})
	p.mustExpect(rec, "put role", http.StatusOK, nil)
	if got, want := keys(t, rec.Body.Bytes()), []string{"joined_at", "last_seen_at", "online", "read_seq", "role", "user"}; !slices.Equal(got, want) {
		t.Errorf("PUT member keys = %v, want %v", got, want)
	}
	p.mustExpect(p.do("DELETE", "/api/rooms/"+p.group+"/members/"+p.id["member2"]+"?ban=true", p.tok["member"], nil), "ban", http.StatusNoContent, nil)
	rec = p.do("GET", "/api/rooms/"+p.group+"/bans", p.tok["admin"], nil)
	var bans struct{ Bans []json.RawMessage }
	p.mustExpect(rec, "bans", http.StatusOK, &bans)
	if len(bans.Bans) != 1 || !slices.Equal(keys(t, bans.Bans[0]), []string{"banned_at", "banned_by", "user"}) {
		t.Errorf("bans = %s", rec.Body)
	}
	p.mustExpect(p.do("POST", "/api/rooms/"+p.group+"/members", p.tok["member2"], nil), "banned join", http.StatusForbidden, nil)
	p.mustExpect(p.do("DELETE", "/api/rooms/"+p.group+"/bans/"+p.id["member2"], p.tok["owner"], nil), "unban", http.StatusNoContent, nil)
	p.mustExpect(p.do("POST", "/api/rooms/"+p.group+"/members", p.tok["member2"], nil), "join after unban", http.StatusCreated, nil)
	// Leave stays leave.
	p.mustExpect(p.do("DELETE", "/api/rooms/"+p.group+"/members/me", p.tok["member2"], nil), "leave", http.StatusNoContent, nil)
	var after struct {
		Members []struct{ User struct{ Name string } }
	}
	p.mustExpect(p.do("GET", "/api/rooms/"+p.group+"/members", p.tok["owner"], nil), "members after leave", http.StatusOK, &after)
	var names []string
	for _, m := range after.Members {
		names = append(names, m.User.Name)
	}
	if !reflect.DeepEqual(names, []string{"owner", "admin", "member"}) {
		t.Errorf("members after leave = %v", names)
	}
}

// TestPeopleBadInput: malformed requests are 400 invalid with the JSON
// error body; a capacity below the members is 409 conflict.
func TestPeopleBadInput(t *testing.T) {
	p := newPeopleEnv(t)
	raw := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.tok["owner"])
		rec := httptest.NewRecorder()
		p.h.ServeHTTP(rec, req)
		return rec
	}
	g := "/api/rooms/" + p.group
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"limit 0", "GET", g + "/members?limit=0", "", 400, "invalid"},
		{"limit word", "GET", g + "/members?limit=ten", "", 400, "invalid"},
		{"bad cursor", "GET", g + "/members?cursor=nope", "", 400, "invalid"},
		{"patch not json", "PATCH", g, "{title", 400, "invalid"},
		{"patch unknown field", "PATCH", g, `{"name":"x"}`, 400, "invalid"},
		{"patch nothing", "PATCH", g, `{}`, 400, "invalid"},
		{"patch empty title", "PATCH", g, `{"title":""}`, 400, "invalid"},
		{"patch negative", "PATCH", g, `{"capacity":-1}`, 400, "invalid"},
		{"patch capacity text", "PATCH", g, `{"capacity":"ten"}`, 400, "invalid"},
		{"patch below members", "PATCH", g, `{"capacity":2}`, 409, "conflict"},
		{"role owner", "PUT", g + "/members/" + p.id["member"], `{"role":"owner"}`, 400, "invalid"},
		{"role missing", "PUT", g + "/members/" + p.id["member"], `{}`, 400, "invalid"},
		{"role of the owner", "PUT", g + "/members/" + p.id["owner"], `{"role":"member"}`, 403, "forbidden"},
		{"role of an outsider", "PUT", g + "/members/" + p.id["outsider"], `{"role":"admin"}`, 404, "not_found"},
		{"ban maybe", "DELETE", g + "/members/" + p.id["member"] + "?ban=maybe", "", 400, "invalid"},
		{"remove self", "DELETE", g + "/members/" + p.id["owner"], "", 400, "invalid"},
		{"remove outsider", "DELETE", g + "/members/" + p.id["outsider"], "", 404, "not_found"},
	} {
		rec := raw(tt.method, tt.path, tt.body)
		var body errorBody
		if rec.Code != tt.status || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error.Code != tt.code || body.Error.Message == "" {
			t.Errorf("%s: %d %s, want %d %s with a message", tt.name, rec.Code, rec.Body, tt.status, tt.code)
		}
	}
	p.mustExpect(raw("PATCH", g, `{"capacity":0}`), "capacity 0", http.StatusOK, nil)
	p.mustExpect(raw("PATCH", g, `{"capacity":4,"title":"four"}`), "capacity = members", http.StatusOK, nil)
}
