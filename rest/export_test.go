package rest

import "net/http"

// MuxForTest returns the Handler's ServeMux, which ServeHTTP skips for
// the hottest routes: the tests compare the two.
func (h *Handler) MuxForTest() http.Handler { return h.mux }
