// Package servicetest starts private instances of the services the
// real-service tests use (redis-server, RabbitMQ, PostgreSQL), for the
// tests that stop, kill or pause one: each has its own port, data
// directory and logs under the test's t.TempDir(), and is stopped at the
// end of the test at the latest, so the shared services on the standard
// ports are never touched. Only tests import it (layout_test.go checks).
//
// Each service has one starter (StartRedis, StartRabbit, StartPostgres)
// and the same controls: Stop (a clean shutdown), Kill (SIGKILL, as a
// crash), Start (again, after Stop or Kill), Restart (Stop and Start, same
// port and data directory), Freeze and Thaw (SIGSTOP and SIGCONT of every
// process of the instance, not only the first: RabbitMQ's beam.smp, its
// helpers and its own epmd, PostgreSQL's postmaster and its backends;
// the sockets stay open and nothing answers) and PIDs. Stop, Kill and the
// end of the test thaw a frozen instance first, so that no stopped
// process outlives a failed test; a test's own cleanups registered after
// the starter run before that, so a test that freezes defers its Thaw.
//
// A starter skips the test, naming the tool, when the tool is not
// installed.
package servicetest
