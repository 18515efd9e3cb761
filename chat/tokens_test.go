package chat_test

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"parley"
	"parley/chat"
)

// TestLogout: Logout refuses the token from then on and reports its hash
// to OnRevoke, leaving the user's other tokens alone; LogoutAll refuses
// every token of the user and reports a nil hash; neither touches other
// users' tokens; a token that does not work cannot log out.
func TestLogout(t *testing.T) {
	type call struct {
		user string
		hash []byte
	}
	var calls []call
	svc := chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap, OnRevoke: func(userID string, hash []byte) {
		calls = append(calls, call{userID, hash})
	}})
	login := func(name string) (string, parley.User) {
		t.Helper()
		tok, u, err := svc.Login(ctx, name, "longenough")
		if err != nil {
			t.Fatal(err)
		}
		return tok, u
	}
	for _, name := range []string{"alice", "bob"} {
		if _, err := svc.Register(ctx, name, "longenough"); err != nil {
			t.Fatal(err)
		}
	}
	a1, alice := login("alice")
	a2, _ := login("alice")
	b1, _ := login("bob")
	hash := func(tok string) []byte { h := sha256.Sum256([]byte(tok)); return h[:] }

	for _, tc := range []struct {
		name     string
		do       func() error
		wantCode string
		want     []call // OnRevoke's calls
		valid    []string
		gone     []string
	}{
		{"log out one token", func() error { return svc.Logout(ctx, a1) }, "",
			[]call{{alice.ID, hash(a1)}}, []string{a2, b1}, []string{a1}},
		{"log out with it again", func() error { return svc.Logout(ctx, a1) }, parley.CodeUnauthorized,
			nil, []string{a2, b1}, []string{a1}},
		{"log out with no token", func() error { return svc.Logout(ctx, "") }, parley.CodeUnauthorized,
			nil, []string{a2, b1}, []string{a1}},
		{"log out with a forged token", func() error { return svc.Logout(ctx, "pt_forged") }, parley.CodeUnauthorized,
			nil, []string{a2, b1}, []string{a1}},
		{"log out everywhere", func() error { return svc.LogoutAll(ctx, alice.ID) }, "",
			[]call{{alice.ID, nil}}, []string{b1}, []string{a1, a2}},
	} {
		calls = nil
		if err := tc.do(); parley.ErrorCode(err) != tc.wantCode {
			t.Errorf("%s: error = %v, want code %q", tc.name, err, tc.wantCode)
		}
		if len(calls) != len(tc.want) {
			t.Errorf("%s: OnRevoke calls = %v, want %v", tc.name, calls, tc.want)
		}
		for i := range min(len(calls), len(tc.want)) {
			if calls[i].user != tc.want[i].user || !bytes.Equal(calls[i].hash, tc.want[i].hash) {
				t.Errorf("%s: OnRevoke(%s, %x), want (%s, %x)", tc.name, calls[i].user, calls[i].hash, tc.want[i].user, tc.want[i].hash)
			}
		}
		for _, tok := range tc.valid {
			if _, err := svc.Authenticate(ctx, tok); err != nil {
				t.Errorf("%s: Authenticate(a token not logged out) = %v, want it working", tc.name, err)
			}
		}
		for _, tok := range tc.gone {
			if _, err := svc.Authenticate(ctx, tok); parley.ErrorCode(err) != parley.CodeUnauthorized {
				t.Errorf("%s: Authenticate(a logged-out token) = %v, want code %s", tc.name, err, parley.CodeUnauthorized)
			}
		}
	}
}
