// Command benchtable is the shared arithmetic of the project's comparison
// scripts (scripts/bench-*.sh) and the writer of BENCHMARKS.md's headline
// table (issue 33: measure pinned, in rounds, and report the median ratio
// with its spread).
//
// The scripts start and stop the servers, pin them (scripts/lib/rounds.sh)
// and run the load generator; what they measure goes through this program,
// in Go because there it is tested:
//
//	benchtable summary -name NAME -title TITLE -metric METRIC -a SIDE -b SIDE \
//	    [-goal G] [-note N] [-pinned P] [-commit C] [-command CMD] [-quick] \
//	    -out DIR ROUNDS-FILE
//
// reads ROUNDS-FILE, one line per round, "ROUND A B" (A and B the two
// sides' figures, '#' starts a comment), prints each round's figures and
// ratio A/B, their median and spread (min-max) for people, then the same as
// one JSON line, which it also writes to DIR/NAME.summary.json (a rerun of
// one comparison replaces its file only).
//
//	benchtable table -results DIR [-results DIR...] [-file BENCHMARKS.md] [-quick]
//
// reads every *.summary.json under the directories (the newest of each name
// wins), and rewrites the lines between "<!-- headline:begin -->" and
// "<!-- headline:end -->" of the file with one table row per comparison:
// its median ratio, spread, rounds, goal, date, build and the exact
// command; the rest of the file is left as it was. Summaries of a quick
// run (QUICK=1: one short round, to try a script) are left out unless
// -quick.
//
//	benchtable quantile -metric NAME [-q 0.99] [-scale 1000] METRICS-FILE
//
// prints the q-quantile of a Prometheus histogram in a saved /metrics page
// (the upper bound of its bucket, times scale: ms from seconds), or "-"
// when it has no observations: the fsync p99 that bench-vs-centrifugo.sh
// adds to Centrifugo's p99 with --sync full.
//
// It runs no load itself and touches no server: single-threaded, no
// concurrency.
package main
