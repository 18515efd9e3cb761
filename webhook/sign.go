package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery.
const (
	HeaderTimestamp = "Parley-Timestamp" // unix seconds of the attempt
	HeaderSignature = "Parley-Signature" // "v1=" and the hex HMAC-SHA256 of "timestamp.body"
	HeaderEvent     = "Parley-Event"     // the event's id, as in the body
)

// DefaultTolerance is how old a signed timestamp Verify accepts.
const DefaultTolerance = 5 * time.Minute

// Sign returns the Parley-Signature of body sent at timestamp ts (unix
// seconds) with secret: "v1=" and the hex HMAC-SHA256 of "ts.body".
func Sign(secret []byte, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify is the receiver's check of a delivery: the signature header
// (one or more comma-separated "v1=…", so that a secret can be rotated)
// must hold the HMAC of "timestamp.body" with secret, and the timestamp
// be within tolerance of now, so that a captured delivery cannot be
// replayed later. docs/webhooks.md has the same check for a receiver
// that does not import Parley.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New("webhook: bad timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance")
	}
	want := Sign(secret, ts, body)
	for _, s := range strings.Split(signature, ",") {
		if hmac.Equal([]byte(strings.TrimSpace(s)), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhook: signature mismatch")
}
