package main

import (
	"runtime"
	"strconv"
	"strings"
)

// minProcs is the fewest Go processors (GOMAXPROCS) serve runs on with the
// embedded SQLite store unless told otherwise. With one logical CPU (or an
// affinity or cpuset of one) the runtime would take one, and then a
// goroutine in a call that holds its thread (the SQLite writer in a cgo
// call, a write or fsync of the WAL) keeps the only processor until the
// runtime's monitor takes it back, 20 µs to 10 ms later. With two, the
// kernel shares the core between that thread and the one running the
// fan-out. Measured on one pinned core at seed 002's load with --sync
// normal: p99 0.87-1.10× Centrifugo's in three runs with two, 1.29× with
// one (docs/perf-log.md, "Two processors on one core"). A node on
// PostgreSQL has no such calls on its hot path and keeps the runtime's.
const minProcs = 2

// procs returns the GOMAXPROCS serve sets, or 0 to leave the runtime's
// own: the --procs flag when positive (-1 leaves the runtime's, whatever
// it is); none when GOMAXPROCS is set in the environment to a number the
// runtime took; else minProcs when the node runs on SQLite and the runtime
// chose fewer. Only raising it from the runtime's choice sets it: setting
// GOMAXPROCS stops the runtime from following the CPUs it may use as they
// change (an affinity or cpuset widened), which it otherwise keeps doing.
func procs(flag int, env string, current int, sqlite bool) int {
	switch {
	case flag > 0:
		return flag
	case flag < 0 || !sqlite || envProcs(env) > 0 || current >= minProcs:
		return 0
	}
	return minProcs
}

// envProcs is the GOMAXPROCS environment variable as the runtime takes it:
// a positive number, else 0 (the runtime ignores the variable).
func envProcs(env string) int {
	n, err := strconv.Atoi(strings.TrimSpace(env))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// setProcs applies procs to the runtime and returns GOMAXPROCS as it is
// then, for the "parley serving" line.
func setProcs(flag int, env string, sqlite bool) int {
	if n := procs(flag, env, runtime.GOMAXPROCS(0), sqlite); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	return runtime.GOMAXPROCS(0)
}
