package rest

import (
	"net/http"
	"slices"
	"strings"

	"parley"
)

// catchAll is the pattern of the route that answers every request no
// other route takes.
const catchAll = "/api/"

// methods are the methods a route may take; noRoute asks the mux about
// each to tell a wrong method (405) from an unknown path (404).
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}

// noRoute answers a request no route took: 405 method_not_allowed with
// the path's methods in Allow when another method has a route for it,
// else 404 not_found.
func (h *Handler) noRoute(w http.ResponseWriter, r *http.Request) error {
	var allow []string
	for _, m := range methods {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := h.mux.Handler(probe); pattern != catchAll && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return parley.Errorf(parley.CodeNotFound, "no such route: %s %s", r.Method, r.URL.Path)
	}
	slices.Sort(allow)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	var body errorBody
	body.Error.Code = "method_not_allowed"
	body.Error.Message = r.Method + " is not a method of " + r.URL.Path + "; it takes " + strings.Join(allow, ", ")
	return writeJSON(w, http.StatusMethodNotAllowed, body)
}

// Routes returns the pattern of every route ("POST /api/users"), in the
// order they were registered, the catch-all last: what the API's
// description (openapi.yaml) must describe.
func (h *Handler) Routes() []string { return slices.Clone(h.patterns) }
