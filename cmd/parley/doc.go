// Command parley runs the Parley chat server and its tools:
//
//	parley serve     start a node (embedded defaults: SQLite in ./data,
//	                 in-process fan-out, HTTP and WebSocket on 127.0.0.1:8080)
//	parley migrate   apply the store's pending schema migrations
//	parley bench     drive a running server with a load scenario
//	parley healthcheck  exit 0 when the node on --addr answers /healthz
//	parley version   print the version
//
// Every flag of a subcommand can also be set with an environment variable:
// --token-ttl is PARLEY_TOKEN_TTL. A flag on the command line wins.
//
// This is the only package that knows the concrete types and wires them.
package main
