// Package inmem holds in-process implementations of Parley's cluster
// contracts: a parley.Broker over a shared Exchange and a parley.Presence
// over a shared Registry. They let several nodes run in one process (tests)
// and are the reference the conformance suites in parleytest are checked
// against. Single-node mode uses neither: with one node every recipient is
// local, so cmd/parley wires the store's events straight to the hub.
//
// It imports only the domain package.
package inmem
