#!/usr/bin/env bash
# bench-all.sh runs the project's pinned comparisons and regenerates
# BENCHMARKS.md's headline table from their summaries (issue 33): the one
# command to rerun the headline figures.
#
#   scripts/bench-all.sh [results-dir]        (default bench-results/headline)
#
# It builds parley once from this checkout (GOFLAGS=-tags=sqlite_fts5, as
# CI does) and runs each comparison of ONLY against that binary, each into
# RESULTS/NAME/:
#
#   rest        scripts/bench-rest.sh           Parley's hot REST reads / a bare handler
#   backup      scripts/bench-backup.sh         send p99 with backups running / without
#   centrifugo  scripts/bench-vs-centrifugo.sh  fan-out p99 / Centrifugo (needs centrifugo:
#                                               go install github.com/centrifugal/centrifugo/v6@v6.9.1)
#   cluster     scripts/bench-cluster.sh        3 nodes' p99 / one node's (PostgreSQL, RabbitMQ, Redis)
#   rabbitmq    scripts/bench-vs-rabbitmq.sh    group and direct p99 / RabbitMQ Web-STOMP
#
# Each script pins (server on core 0, load on core 1), runs ROUNDS rounds
# (5) of fresh servers alternating, and leaves one NAME.summary.json per
# comparison (scripts/lib/rounds.sh). Then `go run ./cmd/benchtable table`
# rewrites the lines between <!-- headline:begin --> and
# <!-- headline:end --> in BENCHMARKS.md from every summary under
# RESULTS: the newest of each comparison, so a partial rerun (ONLY=cluster)
# replaces its rows and keeps the others. TABLE_ONLY=1 runs nothing and
# only rewrites the table. A script that fails is reported at the end (the
# exit status is then 1) and the table is still rewritten from what there
# is.
#
# The whole run takes about 1 h 45 with the defaults (centrifugo ~60 min,
# rabbitmq ~15, rest ~15, cluster ~10, backup ~6): run it on a machine with
# nothing else on its two cores.
#
# Environment: ONLY (default "rest backup centrifugo cluster rabbitmq"),
# TABLE_ONLY (0), ROUNDS, PIN, QUICK (1: every script's short try, one
# round; the table is then printed, with the quick rows, instead of
# written: a try never lands in BENCHMARKS.md), BENCH_FILE (BENCHMARKS.md),
# PARLEY_BIN (a binary instead of building; BENCH_COMMIT then names its
# commit), RABBITMQ_RATES ("1 8": the loads of the RabbitMQ comparison,
# whatever RATES says). Each script's own settings (RATES, DURATION, USERS, ...) pass
# through the environment to every script that reads them: set those on a
# run of one script (ONLY=NAME).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
results=${1:-bench-results/headline}
only=${ONLY:-"rest backup centrifugo cluster rabbitmq"}
file=${BENCH_FILE:-BENCHMARKS.md}
export GOFLAGS=${GOFLAGS:--tags=sqlite_fts5}
mkdir -p "$results"

declare -A script=(
	[rest]=scripts/bench-rest.sh
	[backup]=scripts/bench-backup.sh
	[centrifugo]=scripts/bench-vs-centrifugo.sh
	[cluster]=scripts/bench-cluster.sh
	[rabbitmq]=scripts/bench-vs-rabbitmq.sh
)
for name in $only; do
	[ -n "${script[$name]:-}" ] || {
		echo "ONLY: no comparison named $name: choose among ${!script[*]}" >&2
		exit 2
	}
done

failed=()
if [ "${TABLE_ONLY:-0}" != 1 ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	if [ -z "${PARLEY_BIN:-}" ]; then
		echo "== building parley ($GOFLAGS)"
		go build -o "$tmp/parley" ./cmd/parley || exit 1
		export PARLEY_BIN=$tmp/parley
		BENCH_COMMIT=${BENCH_COMMIT:-$(git describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)}
		export BENCH_COMMIT
	fi
	for name in $only; do
		echo "== $name: ${script[$name]} $results/$name ($(date -u +%H:%M:%S) UTC)"
		extra=()
		# RabbitMQ at seed 002's load and at 8× (the seeds' table quotes it),
		# not the script's five loads: the headline table stays short.
		[ "$name" = rabbitmq ] && extra=(RATES="${RABBITMQ_RATES:-1 8}")
		if ! env "${extra[@]}" "${script[$name]}" "$results/$name" 2>&1 | tee "$results/$name.log"; then
			echo "== $name FAILED: see $results/$name.log" >&2
			failed+=("$name")
		fi
	done
fi

if [ "${QUICK:-0}" = 1 ]; then
	echo "== the headline table from the quick summaries (not written to $file):"
	go run ./cmd/benchtable table -results "$results" -quick -file -
else
	go run ./cmd/benchtable table -results "$results" -file "$file"
fi || exit 1
if ((${#failed[@]})); then
	echo "== failed: ${failed[*]} (their rows, if any, are from an earlier run)" >&2
	exit 1
fi
