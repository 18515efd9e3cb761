#!/usr/bin/env bash
# bench-cluster.sh measures seed 002's group load on one node and over a
# cluster, alternating in one run on the same machine, with the same load
# generator (issue 16, goal 5: the cluster's p99 at most 1.5× one node's,
# at most nodes − 1 broker publishes a message):
#
#   one      `parley serve` with its defaults (SQLite, --sync full), a fresh
#            --data each round
#   cluster  NODES nodes from scripts/cluster.sh against PostgreSQL,
#            RabbitMQ and Redis, a fresh database and Redis key prefix
#            each round
#
# Each round runs `parley bench group --users USERS --interval INTERVAL
# --duration DURATION` against one node, then against the cluster's nodes
# (--nodes: the members spread over them), and prints the ratio of the
# p99s. Each run leaves its report (NAME.txt, .json, .html) and each
# cluster node's /metrics at its end (cluster-R.nodeN.metrics: the relay's
# parley_cluster_delivery_seconds, the store's parley_store_commit_seconds,
# set-up included) in the output directory.
#
# Usage: scripts/bench-cluster.sh [output-dir]
# Environment: PARLEY_BIN (a parley binary to run instead of building this
# checkout), ROUNDS (2), DURATION (20s), USERS (250), INTERVAL (1s-3s),
# NODES (3), ONE_PORT (19650), BASE_PORT (19311: the cluster's first node),
# PG_URL (postgres://postgres@127.0.0.1:5432: the server where each round
# creates, and at the end drops, its database parley_bc_RUN_R), and
# cluster.sh's PARLEY_BROKER and PARLEY_REDIS. The cluster's nodes keep
# their files in data/cluster/ (cluster.sh), which each round empties of
# node data: the script refuses to start while a node of cluster.sh runs.
set -euo pipefail

cd "$(dirname "$0")/.."
out=${1:-bench-results}
rounds=${ROUNDS:-2}
duration=${DURATION:-20s}
users=${USERS:-250}
interval=${INTERVAL:-1s-3s}
nodes=${NODES:-3}
one_port=${ONE_PORT:-19650}
base_port=${BASE_PORT:-19311}
pg=${PG_URL:-postgres://postgres@127.0.0.1:5432}
mkdir -p "$out"

for f in data/cluster/node*.pid; do
	if [[ -f "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null; then
		echo "a node of scripts/cluster.sh runs ($f): stop it first (scripts/cluster.sh stop)" >&2
		exit 1
	fi
done

tmp=$(mktemp -d)
bin=$tmp/parley
if [[ -n "${PARLEY_BIN:-}" ]]; then
	cp "$PARLEY_BIN" "$bin"
else
	echo "== building parley"
	go build -tags sqlite_fts5 -o "$bin" ./cmd/parley
fi

run_id="$(date +%s)$$"
one_pid=
databases=()
cleanup() {
	if [[ -n "$one_pid" ]]; then
		kill "$one_pid" 2>/dev/null || true
		wait "$one_pid" 2>/dev/null || true
	fi
	scripts/cluster.sh stop >/dev/null 2>&1 || true
	if command -v psql >/dev/null; then
		for db in "${databases[@]}"; do
			psql "$pg/postgres" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
		done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# bench NAME ARGS...: one run of the group scenario, its report kept.
bench() {
	local name=$1
	shift
	echo "== $name ($(cut -d' ' -f1-3 /proc/loadavg))"
	"$bin" bench group --users "$users" --interval "$interval" --duration "$duration" --progress off \
		--json "$out/$name.json" --html "$out/$name.html" "$@" | tee "$out/$name.txt"
}

# field NAME.txt: "p50 p99 lost publishes" of a report.
field() {
	awk '/^ *latency \(ms\)/ { for (i = 1; i < NF; i++) { if ($i == "p50") p50 = $(i+1); if ($i == "p99") p99 = $(i+1) } }
		/^ *deliveries / { for (i = 1; i < NF; i++) if ($i == "lost") lost = $(i+1) }
		/^ *publishes\/msg/ { pub = $2 }
		END { sub(/,$/, "", lost); print p50, p99, lost, pub }' "$1"
}

summary=()
for ((r = 1; r <= rounds; r++)); do
	data=$(mktemp -d -p "$tmp")
	"$bin" serve --addr "127.0.0.1:$one_port" --data "$data" --signup-rate 0 --login-max-wait 0 \
		--rest-send-rate 0 --log-level warn >>"$out/one-serve.log" 2>&1 &
	one_pid=$!
	for _ in $(seq 1 100); do
		curl -fsS "http://127.0.0.1:$one_port/readyz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	bench "one-$r" --url "http://127.0.0.1:$one_port" --server-pid "$one_pid"
	kill "$one_pid"
	wait "$one_pid" 2>/dev/null || true
	one_pid=

	db="parley_bc_${run_id}_$r"
	databases+=("$db")
	rm -rf data/cluster/node[0-9]*/
	PARLEY_BIN=$bin BASE_PORT=$base_port PARLEY_STORE="$pg/$db?sslmode=disable" \
		scripts/cluster.sh start "$nodes" --signup-rate 0 --login-max-wait 0 --rest-send-rate 0 \
		--redis-prefix "parley:bc$run_id$r:" >>"$out/cluster-serve.log" 2>&1
	urls=
	for ((i = 0; i < nodes; i++)); do urls+="${urls:+,}http://127.0.0.1:$((base_port + i))"; done
	bench "cluster-$r" --nodes "$urls"
	for ((i = 1; i <= nodes; i++)); do
		curl -fsS "http://127.0.0.1:$((base_port + i - 1))/metrics" >"$out/cluster-$r.node$i.metrics" || true
	done
	scripts/cluster.sh stop >/dev/null

	read -r p50a p99a losta _ <<<"$(field "$out/one-$r.txt")"
	read -r p50b p99b lostb pubb <<<"$(field "$out/cluster-$r.txt")"
	summary+=("$(awk -v r="$r" -v a="$p50a" -v b="$p99a" -v c="$p50b" -v d="$p99b" -v la="$losta" -v lb="$lostb" -v p="$pubb" -v n="$nodes" \
		'BEGIN { printf "round %d: one node p50 %s p99 %s ms (lost %s); %d nodes p50 %s p99 %s ms (lost %s, %s publishes/msg); p99 ratio %.2f (goal <= 1.50)", r, a, b, la, n, c, d, lb, p, d / b }')")
done

echo "== summary (results in $out/)"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
