package rest

import (
	"context"
	"net/http"
	"time"

	"parley"
	"parley/webhook"
)

// Outgoing webhooks over HTTP (docs/webhooks.md): the admin's routes
// beside `parley webhook`, for API keys with the scope webhooks only (a
// person's token, even a room owner's, is 403: a webhook sees every room
// it is registered for, so it is the server's admin's, not a member's).
// A URL is checked against the node's allow-list as the CLI checks it;
// every node checks the address again at each connection.

// WebhookAdmin keeps the outgoing webhooks: both durable stores do.
type WebhookAdmin interface {
	Webhooks(ctx context.Context) ([]parley.Webhook, error)
	CreateWebhook(ctx context.Context, h parley.Webhook) (parley.Webhook, error)
	ResumeWebhook(ctx context.Context, name string) (parley.Webhook, error)
	RemoveWebhook(ctx context.Context, name string) error
}

// webhookView is a webhook as the API shows it: never its secret, but
// once, in the answer that made it.
type webhookView struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	URL          string     `json:"url"`
	Events       []string   `json:"events"`
	RoomID       *string    `json:"room_id"`
	CreatedAt    time.Time  `json:"created_at"`
	PausedAt     *time.Time `json:"paused_at"`
	PausedReason string     `json:"paused_reason,omitempty"`
	Secret       string     `json:"secret,omitempty"`
}

func viewWebhook(h parley.Webhook) webhookView {
	v := webhookView{ID: h.ID, Name: h.Name, URL: h.URL, Events: h.Kinds, CreatedAt: h.CreatedAt.UTC(),
		PausedAt: h.PausedAt, PausedReason: h.PausedReason}
	if h.RoomID != "" {
		v.RoomID = &h.RoomID
	}
	return v
}

func (h *Handler) webhookRoutes() {
	h.handle("GET /api/webhooks", h.authed(h.hookAdmin(h.listWebhooks)))
	h.handle("POST /api/webhooks", h.authed(h.hookAdmin(h.addWebhook)))
	h.handle("POST /api/webhooks/{name}/resume", h.authed(h.hookAdmin(h.resumeWebhook)))
	h.handle("DELETE /api/webhooks/{name}", h.authed(h.hookAdmin(h.removeWebhook)))
}

// hookAdmin lets only bots through (their keys' scope was checked by
// authenticateKey), and only on a node that keeps webhooks.
func (h *Handler) hookAdmin(f handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		switch {
		case !parley.IsBotID(userOf(r).ID):
			return parley.Errorf(parley.CodeForbidden, "webhooks are managed with an API key of the scope %q (parley apikey create --scopes %s) or with parley webhook", parley.ScopeWebhooks, parley.ScopeWebhooks)
		case h.webhooks == nil:
			return parley.Errorf(parley.CodeNotFound, "this server keeps no webhooks")
		}
		return f(w, r)
	}
}

func (h *Handler) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	all, err := h.webhooks.Webhooks(r.Context())
	if err != nil {
		return err
	}
	out := make([]webhookView, 0, len(all))
	for _, wh := range all {
		out = append(out, viewWebhook(wh))
	}
	return writeJSON(w, http.StatusOK, struct {
		Webhooks []webhookView `json:"webhooks"`
	}{out})
}

func (h *Handler) addWebhook(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name   string   `json:"name"`
		URL    string   `json:"url"`
		Events []string `json:"events"`
		RoomID string   `json:"room_id"`
		Secret string   `json:"secret"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	if req.Events == nil {
		req.Events = parley.HookKinds
	}
	wh, err := webhook.New(req.Name, req.URL, req.Events, req.RoomID, req.Secret, h.hookFilter)
	if err != nil {
		return err
	}
	made, err := h.webhooks.CreateWebhook(r.Context(), wh)
	if err != nil {
		return err
	}
	v := viewWebhook(made)
	v.Secret = wh.Secret // shown once
	return writeJSON(w, http.StatusCreated, v)
}

func (h *Handler) resumeWebhook(w http.ResponseWriter, r *http.Request) error {
	wh, err := h.webhooks.ResumeWebhook(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewWebhook(wh))
}

func (h *Handler) removeWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := h.webhooks.RemoveWebhook(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
