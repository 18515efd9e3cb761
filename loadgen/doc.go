// Package loadgen drives a running Parley deployment with the load scenarios
// of design §7 (the load tests of the seeds) and measures it: latency in HDR
// histograms, throughput, errors by kind and, for messaging, loss. The
// messaging scenarios can also drive RabbitMQ's Web-STOMP plugin with the
// same clients, for a side-by-side comparison.
//
// Each scenario sets itself up through the public API (sign-up, rooms,
// joins, history), then measures; set-up time is reported apart. Every loop
// is bounded in count and in time, and the only hosts contacted are the
// URLs given in Options.
//
// Run is the entry point; WriteText, WriteJSON and WriteHTML render a
// Result. cmd/parley's bench command only parses flags and prints.
//
// It imports the stomp codec and no other package of the project: it
// talks to a server over the network only.
package loadgen
