package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/webhook"
)

// verifyParley is the receiver's check that docs/webhooks.md shows (a
// test below finds it there, character for character): it needs only the
// standard library.
func verifyParley(secret []byte, r *http.Request, body []byte, now time.Time) error {
	ts := r.Header.Get("Parley-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || math.Abs(now.Sub(time.Unix(sec, 0)).Seconds()) > 300 {
		return errors.New("stale or missing Parley-Timestamp")
	}
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%s.%s", ts, body)
	want := "v1=" + hex.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Split(r.Header.Get("Parley-Signature"), ",") {
		if hmac.Equal([]byte(strings.TrimSpace(sig)), []byte(want)) {
			return nil
		}
	}
	return errors.New("bad Parley-Signature")
}

// TestDocumentedCheck: the receiver's check in docs/webhooks.md is
// verifyParley, which accepts what Sign signs and refuses the rest.
func TestDocumentedCheck(t *testing.T) {
	doc, err := os.ReadFile("../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("sign_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	start := strings.Index(s, "func verifyParley(")
	end := start + strings.Index(s[start:], "\n}\n") + 3
	if !strings.Contains(string(doc), s[start:end]) {
		t.Errorf("docs/webhooks.md does not hold verifyParley of sign_test.go as it is:\n%s", s[start:end])
	}

	secret, body, now := []byte("whsec_0123456789abcdef"), []byte(`{"id":"r.s1"}`), time.Unix(1_800_000_000, 0)
	req := func(ts int64, sig string) *http.Request {
		r, _ := http.NewRequest("POST", "http://x/", nil)
		r.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
		r.Header.Set(webhook.HeaderSignature, sig)
		return r
	}
	good := webhook.Sign(secret, now.Unix(), body)
	for _, c := range []struct {
		name string
		r    *http.Request
		body []byte
		ok   bool
	}{
		{"signed", req(now.Unix(), good), body, true},
		{"rotated secret: two signatures", req(now.Unix(), "v1=00, "+good), body, true},
		{"other body", req(now.Unix(), good), []byte(`{"id":"r.s2"}`), false},
		{"other timestamp", req(now.Unix()+1, good), body, false},
		{"too old", req(now.Unix()-301, webhook.Sign(secret, now.Unix()-301, body)), body, false},
		{"other secret", req(now.Unix(), webhook.Sign([]byte("another secret!!"), now.Unix(), body)), body, false},
	} {
		err := verifyParley(secret, c.r, c.body, now)
		if (err == nil) != c.ok {
			t.Errorf("%s: verifyParley = %v, want ok %v", c.name, err, c.ok)
		}
		err = webhook.Verify(secret, c.r.Header.Get(webhook.HeaderTimestamp), c.r.Header.Get(webhook.HeaderSignature), c.body, now, webhook.DefaultTolerance)
		if (err == nil) != c.ok {
			t.Errorf("%s: Verify = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestSign pins the signature: HMAC-SHA256 of "timestamp.body", in hex.
func TestSign(t *testing.T) {
	got := webhook.Sign([]byte("secret"), 1700000000, []byte("{}"))
	mac := hmac.New(sha256.New, []byte("secret"))
	mac.Write([]byte("1700000000.{}"))
	if want := "v1=" + hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}
