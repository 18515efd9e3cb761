package main

import (
	"runtime"
	"strings"
)

// minProcs is the fewest Go processors (GOMAXPROCS) serve runs on unless
// told otherwise. On a machine or container of one core the runtime would
// take one, and then a goroutine in a call that holds its thread (the
// SQLite writer in a cgo call, the WAL's fsync, a file write) holds the
// only processor until the runtime's monitor takes it back, 20 µs to 10 ms
// later: meanwhile no session is written. With two the other one runs the
// fan-out while the first is held, and the kernel shares the core between
// the two threads. Measured on one pinned core at seed 002's load with
// --sync normal: p99 0.87× Centrifugo's with two, 1.29× with one
// (docs/perf-log.md, "Two processors on one core").
const minProcs = 2

// procs returns the GOMAXPROCS serve sets, or 0 to leave the runtime's
// own: the --procs flag when given (> 0); none when GOMAXPROCS is set in
// the environment (the runtime took it); else minProcs when the runtime
// chose fewer. Only raising it from the runtime's choice sets it: setting
// GOMAXPROCS stops the runtime from following a container's CPU limit as
// it changes, which on two cores or more it keeps doing.
func procs(flag int, env string, current int) int {
	switch {
	case flag > 0:
		return flag
	case strings.TrimSpace(env) != "":
		return 0
	case current < minProcs:
		return minProcs
	}
	return 0
}

// setProcs applies procs to the runtime and returns GOMAXPROCS as it is
// then, for the "parley serving" line.
func setProcs(flag int, env string) int {
	if n := procs(flag, env, runtime.GOMAXPROCS(0)); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	return runtime.GOMAXPROCS(0)
}
