package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"net/url"
	"os"
	"strings"
)

type answer struct {
	status int
	header http.Header
	body   []byte
}

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(s string) error { *h = append(*h, s); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to serve on")
	debug := flag.String("debug-addr", "", "serve Go's pprof profiles at http://ADDR/debug/pprof/ (empty: off)")
	var reqHeaders headers
	flag.Var(&reqHeaders, "H", "request header `Name: value` for fetching the answers (repeatable)")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("httpmirror: give the URLs to mirror")
	}
	answers := map[string]*answer{}
	for _, raw := range flag.Args() {
		a, uri, err := fetch(raw, reqHeaders)
		if err != nil {
			log.Fatalf("httpmirror: %s: %v", raw, err)
		}
		answers[uri] = a
		fmt.Fprintf(os.Stderr, "httpmirror: %s → %d, %d bytes\n", uri, a.status, len(a.body))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if *debug != "" {
		go func() { log.Fatal(http.ListenAndServe(*debug, nil)) }() // net/http/pprof's routes
	}
	fmt.Println("ready")
	// A bare handler, not DefaultServeMux (which has pprof's routes).
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.RequestURI]
		if a == nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		for k, v := range a.header {
			h[k] = v
		}
		w.WriteHeader(a.status)
		w.Write(a.body)
	})))
}

// fetch gets raw once and returns its answer and its RequestURI.
func fetch(raw string, hs []string) (*answer, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequest("GET", raw, nil)
	if err != nil {
		return nil, "", err
	}
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return nil, "", fmt.Errorf("header %q is not Name: value", h)
		}
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	h := resp.Header.Clone()
	h.Del("Date")
	return &answer{status: resp.StatusCode, header: h, body: body}, u.RequestURI(), nil
}
