package webhook

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"

	"parley"
)

// nameRule is what a webhook's name may be.
var nameRule = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,32}$`)

// MinSecret is the shortest signing secret an admin may give.
const MinSecret = 16

// New returns the webhook that an admin asks for, with a fresh id, checked
// as `parley webhook add` and POST /api/webhooks check it: the name (3 to
// 32 of A-Z a-z 0-9 _ . -), the URL against f (an http or https URL whose
// host is not internal unless allowed), the kinds (known, at least one;
// repeats dropped), the secret (at least MinSecret bytes; "" makes a
// random one, which the caller shows once). Fails with CodeInvalid.
func New(name, target string, kinds []string, roomID, secret string, f *Filter) (parley.Webhook, error) {
	h := parley.Webhook{ID: parley.NewID(), Name: name, URL: target, RoomID: roomID, Secret: secret}
	if !nameRule.MatchString(name) {
		return h, parley.Errorf(parley.CodeInvalid, "a webhook's name is 3 to 32 of A-Z a-z 0-9 _ . -")
	}
	if err := f.CheckURL(target); err != nil {
		return h, parley.Errorf(parley.CodeInvalid, "%v", err)
	}
	for _, k := range kinds {
		k = strings.TrimSpace(k)
		if k == "" || slices.Contains(h.Kinds, k) {
			continue
		}
		if !slices.Contains(parley.HookKinds, k) {
			return h, parley.Errorf(parley.CodeInvalid, "unknown event kind %q; want %s", k, strings.Join(parley.HookKinds, ", "))
		}
		h.Kinds = append(h.Kinds, k)
	}
	if len(h.Kinds) == 0 {
		return h, parley.Errorf(parley.CodeInvalid, "no event kind; want some of %s", strings.Join(parley.HookKinds, ", "))
	}
	switch {
	case secret == "":
		b := make([]byte, 24)
		rand.Read(b)
		h.Secret = "whsec_" + hex.EncodeToString(b)
	case len(secret) < MinSecret:
		return h, parley.Errorf(parley.CodeInvalid, "a signing secret has at least %d bytes", MinSecret)
	}
	return h, nil
}
