package main

import (
	"net/http"
	"net/http/pprof"
)

// debugRoutes adds Go's pprof profiles to mux, for operators profiling a
// node under load; serveOps serves them apart from the public address.
func debugRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
