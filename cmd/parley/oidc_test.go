package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOIDCFlags: the --oidc-* settings Open refuses, each with an error
// naming its flag, and the button's default name.
func TestOIDCFlags(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := oidcConfig{Issuer: "https://id.example", ClientID: "parley", RedirectURL: "https://chat.example/api/auth/oidc/callback"}
	for _, tc := range []struct {
		name      string
		change    func(*oidcConfig)
		clustered bool
		want      string // in the error; "" for none
	}{
		{"client id without an issuer", func(c *oidcConfig) { c.Issuer = "" }, false, "--oidc-issuer"},
		{"no client id", func(c *oidcConfig) { c.ClientID = "" }, false, "client id"},
		{"no redirect URL", func(c *oidcConfig) { c.RedirectURL = "" }, false, "redirect URL"},
		{"another callback path", func(c *oidcConfig) { c.RedirectURL = "https://chat.example/callback" }, false, "--oidc-redirect-url"},
		{"a secret twice", func(c *oidcConfig) { c.ClientSecret, c.ClientSecretFile = "x", secretFile }, false, "--oidc-client-secret-file"},
		{"a missing secret file", func(c *oidcConfig) { c.ClientSecretFile = secretFile + ".gone" }, false, "--oidc-client-secret-file"},
		{"a short state key", func(c *oidcConfig) { c.StateKey = "short" }, false, "--oidc-state-key"},
		{"a public client in a cluster without a state key", func(c *oidcConfig) {}, true, "--oidc-state-key"},
		{"a public client on one node", func(c *oidcConfig) {}, false, ""},
		{"a confidential client in a cluster", func(c *oidcConfig) { c.ClientSecretFile = secretFile }, true, ""},
		{"a public client in a cluster with a state key", func(c *oidcConfig) { c.StateKey = "sixteen or more characters" }, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.change(&c)
			m := &Main{Config: Config{OIDC: c}}
			o, err := m.openOIDC(nil, tc.clustered)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("openOIDC: %v, want none", err)
			case tc.want == "" && (o == nil || o.Name != "id.example" || !o.Secure):
				t.Errorf("openOIDC = %+v, want one named id.example with Secure cookies", o)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("openOIDC: %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if o, err := (&Main{}).openOIDC(nil, false); o != nil || err != nil {
		t.Errorf("openOIDC without --oidc-issuer = %v, %v; want off", o, err)
	}
}

// TestPasswordLoginFlag: --password-login defaults to true (Config{} has
// passwords on) and --password-login=false turns them off.
func TestPasswordLoginFlag(t *testing.T) {
	if serveDefaults().NoPasswordLogin {
		t.Error("passwords are off by default")
	}
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.flags(fs)
	if err := fs.Parse([]string{"--password-login=false"}); err != nil || !c.NoPasswordLogin {
		t.Errorf("--password-login=false: NoPasswordLogin = %v (%v), want true", c.NoPasswordLogin, err)
	}
	if err := fs.Parse([]string{"--password-login"}); err != nil || c.NoPasswordLogin {
		t.Errorf("--password-login: NoPasswordLogin = %v (%v), want false", c.NoPasswordLogin, err)
	}
}
