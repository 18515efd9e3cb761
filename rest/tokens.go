package rest

import "net/http"

// logout revokes the request's own bearer token (DELETE
// /api/tokens/current): 204, and it stops working on every node.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) error {
	token, _ := bearer(r.Header.Get("Authorization")) // authed checked it
	if err := h.chat.Logout(r.Context(), token); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// logoutAll revokes every token of the caller (DELETE /api/tokens): 204.
func (h *Handler) logoutAll(w http.ResponseWriter, r *http.Request) error {
	if err := h.chat.LogoutAll(r.Context(), userOf(r).ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
