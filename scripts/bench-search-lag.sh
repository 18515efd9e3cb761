#!/usr/bin/env bash
# bench-search-lag.sh measures how far the search index trails the send
# (issue 33: ≤ 1 s at p99 under 8× seed 002's load): ROUNDS rounds, each a
# fresh `parley serve` (SQLite, --sync full) pinned to CPU 0 and `parley
# bench group --users 250 --interval 250ms --duration 20s` (8× seed 002)
# pinned to CPU 1; after each, the server's parley_search_lag_seconds
# histogram (send to the commit that indexed it) gives the p50 and p99 as
# the upper bounds of their buckets, and the bench its delivery figures.
#
# Usage: scripts/bench-search-lag.sh PARLEY_BIN [output-dir]
# Environment: ROUNDS (3), PARLEY_PORT (18990).
set -euo pipefail
bin=$(realpath "$1")
out=$(realpath -m "${2:-bench-results/search-lag}")
port=${PARLEY_PORT:-18990}
mkdir -p "$out"
for r in $(seq "${ROUNDS:-3}"); do
	data=$(mktemp -d)
	taskset -c 0 "$bin" serve --addr "127.0.0.1:$port" --data "$data" --signup-rate 0 --rest-send-rate 0 >"$out/serve$r.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
	taskset -c 1 "$bin" bench group --url "http://127.0.0.1:$port" --users 250 --interval 250ms --duration 20s --progress off >"$out/bench$r.txt" 2>&1 || true
	curl -s "http://127.0.0.1:$port/metrics" | grep -E '^parley_search_(lag_seconds|behind)' >"$out/metrics$r.txt"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	rm -rf "$data"
	awk -v r="$r" '
		/^parley_search_lag_seconds_bucket/ { le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le); n++; les[n] = le; cs[n] = $2 }
		/^parley_search_lag_seconds_count/ { total = $2 }
		END {
			for (i = 1; i <= n; i++) { if (!p50 && cs[i] >= 0.5 * total) p50 = les[i]; if (!p99 && cs[i] >= 0.99 * total) p99 = les[i] }
			printf "round %d: %d messages indexed, lag p50 <= %s s, p99 <= %s s\n", r, total, p50, p99
		}' "$out/metrics$r.txt"
	grep -E 'deliveries +received|latency \(ms\)' "$out/bench$r.txt" || true
done
