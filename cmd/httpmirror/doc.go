// Command httpmirror is the baseline of scripts/bench-rest.sh: it fetches
// the answers of a running server once (status, headers and body of each
// URL given) and then serves them from a bare net/http handler, so that a
// load generator can compare the server with the cheapest thing that sends
// the same bytes.
//
// Usage:
//
//	httpmirror -addr 127.0.0.1:8090 -H 'Authorization: Bearer TOKEN' \
//	    http://127.0.0.1:8089/api/me/rooms http://127.0.0.1:8089/api/rooms/ID/messages?limit=50
//
// A request whose path and query (RequestURI) match one of the URLs gets
// its answer, any other 404. Every response header of the original is
// sent but Date, which net/http writes itself; the request's headers are
// not looked at. It prints "ready" on stdout once it listens.
package main
