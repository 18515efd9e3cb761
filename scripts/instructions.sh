#!/usr/bin/env bash
# instructions.sh counts the CPU instructions one benchmark op costs, in
# two builds of a package, with valgrind's callgrind: a count, not a time,
# so the same within a few per cent whatever else the machine is doing
# (this machine's timings swing 2-7x). Each build's test binary runs the
# benchmark for N1 and N2 iterations (-test.benchtime=Nx) under callgrind;
# (instructions(N2) - instructions(N1)) / (N2 - N1) is the op's cost, the
# set-up cancelled out. GOMAXPROCS=1, so that no idle thread spins into
# the count, and asynchronous preemption off (callgrind does not follow
# Go's SIGURG). ROUNDS rounds alternate the two builds.
#
# Usage: scripts/instructions.sh BEFORE.test AFTER.test BENCH N1 N2 [test flags...]
# Example (a message's fan-out to 1,000 sessions, before and after a change):
#   git worktree add --detach /tmp/wt-before REV
#   (cd /tmp/wt-before && go test -c -tags sqlite_fts5 -o /tmp/gw-before.test ./gateway/)
#   go test -c -tags sqlite_fts5 -o /tmp/gw-after.test ./gateway/
#   scripts/instructions.sh /tmp/gw-before.test /tmp/gw-after.test '^BenchmarkFanOut$/^websocket$' 100 300
# Needs valgrind (apt-get install valgrind). Environment: ROUNDS (3).
set -euo pipefail
if [ $# -lt 5 ]; then
	sed -n '2,18p' "$0" >&2
	exit 2
fi
before=$1 after=$2 bench=$3 n1=$4 n2=$5
shift 5
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
count() { # binary iterations: the instructions callgrind collected
	GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$1" -test.run='^$' -test.bench="$bench" -test.benchtime="$2x" "${@:3}" 2>&1 |
		sed -n 's/.*Collected : //p'
}
for r in $(seq "${ROUNDS:-3}"); do
	for side in before after; do
		bin=$before
		[ "$side" = after ] && bin=$after
		c1=$(count "$bin" "$n1" "$@")
		c2=$(count "$bin" "$n2" "$@")
		echo "round $r $side: $(((c2 - c1) / (n2 - n1))) instructions/op"
	done
done
