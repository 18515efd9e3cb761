package rest

import (
	_ "embed"
	"net/http"

	"parley"
)

// OpenAPI is the API's description, OpenAPI 3.1 in YAML, served at
// GET /api/openapi.yaml. rest/openapi_test.go checks that it describes
// every route of the router.
//
//go:embed openapi.yaml
var OpenAPI []byte

func (h *Handler) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "no-cache")
	_, err := w.Write(OpenAPI)
	return err
}

// clientConfig answers GET /api/config: the limits a client checks before
// it sends, so that it need not learn them from a refusal.
func (h *Handler) clientConfig(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, struct {
		MaxBody     int `json:"max_body"`
		MaxClientID int `json:"max_client_id"`
		MaxPage     int `json:"max_page"`
		// SignupsLimited: sign-ups are limited per client address, which
		// parley bench checks before it spends any of them.
		SignupsLimited bool `json:"signups_limited"`
		// PasswordLogin: sign-up and password login are on; OIDC, when
		// not nil, names the OpenID Connect provider (oidc.go).
		PasswordLogin bool        `json:"password_login"`
		OIDC          *oidcConfig `json:"oidc"`
	}{h.chat.MaxBody(), parley.MaxClientID, parley.MaxPageLimit, h.signupLimit != nil, !h.noPasswords, h.oidcConfig()})
}

// oidcConfig is what GET /api/config says of OpenID Connect sign-in.
type oidcConfig struct {
	Name  string `json:"name"`
	Start string `json:"start"`
}

func (h *Handler) oidcConfig() *oidcConfig {
	if h.oidc == nil {
		return nil
	}
	return &oidcConfig{Name: h.oidc.Name, Start: "/api/auth/oidc/start"}
}
