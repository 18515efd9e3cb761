// Package chaos is Parley's fault-injection suite (issue 11): it runs real
// `parley serve` processes against private Redis, RabbitMQ and PostgreSQL
// instances that it starts itself, kills nodes and services under load
// with SIGKILL or SIGTERM, and checks from its own receipts, its
// subscribers and the database that no receipted message is lost or
// duplicated, that seqs have no holes, that every subscriber gets every
// seq once in order, and how long recovery takes.
//
// The package has no code of its own: everything is in its tests, which
// run only with PARLEY_TEST_CHAOS=1 (.ci/run sets it):
//
//	PARLEY_TEST_CHAOS=1 go test -run TestChaos -v -timeout 15m ./chaos/
//
// The cases that use a shared service rather than a private one need
// PARLEY_TEST_POSTGRES and PARLEY_TEST_AMQP, as the cluster tests do.
// PARLEY_CHAOS_BIN runs the suite against a parley binary built
// elsewhere; PARLEY_CHAOS_RESULTS names a file to which each case
// appends its row of BENCHMARKS.md's reliability table.
package chaos
