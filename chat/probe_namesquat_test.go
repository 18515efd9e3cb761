package chat_test

import (
	"testing"

	"parley/chat"
)

// Probe: the names an outside identity's new account tries are all
// derived from what anyone can know: the wanted name (the provider's
// preferred_username) and the id, ExternalUserID(issuer, subject), a hash
// of the issuer URL and the subject, which many providers make public (a
// GitHub or GitLab user id, a username, an email). With sign-up open, an
// attacker registers the three names ahead of a victim's first sign-in
// (the wanted name, that name cut with "-" and 8 characters of the id,
// "user-" and 26 characters of the id): the victim's JWT or OpenID
// Connect sign-in then fails with conflict, for good, as the names never
// change. The last resort should be a name no one can take ahead (e.g.
// one not valid for a local sign-up, or one made unique at creation).
func TestProbeExternalNamesSquatted(t *testing.T) {
	s := chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap})
	const issuer, subject = "https://accounts.example", "victim-subject-1234"
	id := chat.ExternalUserID(issuer, subject)
	for _, n := range chat.ExternalNames(id, "victim") {
		if _, err := s.Register(ctx, n, "correct horse"); err != nil {
			t.Fatalf("Register(%q) error = %v", n, err)
		}
	}
	if u, err := s.ProvisionExternal(ctx, issuer, subject, "victim"); err != nil {
		t.Errorf("the victim's first sign-in fails for good after the attacker registered %v: %v", chat.ExternalNames(id, "victim"), err)
	} else {
		t.Logf("provisioned %+v", u)
	}
}
