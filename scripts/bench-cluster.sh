#!/usr/bin/env bash
# bench-cluster.sh measures seed 002's group load on one node and over a
# cluster, alternating in one run on the same machine, with the same load
# generator (issue 16, goal 5; issue 33, goal 4: the cluster's p99 at most
# 1.5× one node's, at most nodes − 1 broker publishes a message):
#
#   one      `parley serve` with its defaults (SQLite, --sync full), a fresh
#            --data each round
#   cluster  NODES nodes from scripts/cluster.sh against PostgreSQL,
#            RabbitMQ and Redis, a fresh database and Redis key prefix
#            each round
#
# Each of ROUNDS rounds runs `parley bench group --users USERS --interval
# INTERVAL --duration DURATION` against one node and against the cluster's
# nodes (--nodes: the members spread over them), one node first in odd
# rounds and the cluster first in even ones; then the median of the
# rounds' p99 ratios (cluster / one node) with its spread and each round's
# figures are printed and saved as OUT/cluster-p99.summary.json
# (scripts/lib/rounds.sh, cmd/benchtable). Each run leaves its report
# (NAME.txt, .json, .html) and each cluster node's /metrics at its end
# (cluster-R.nodeN.metrics: the relay's parley_cluster_delivery_seconds, the
# store's parley_store_commit_seconds, set-up included).
#
# Pinning (PIN=1, the default): the one node, and all NODES nodes of the
# cluster together, on core 0; the load generator on core 1. PostgreSQL,
# RabbitMQ and Redis are the machine's shared services (other work uses
# them too) and are not pinned: they may run on either core, so the
# cluster side gets their CPU beside its core 0 and the load generator
# shares core 1 with them. Read the ratio as the cluster's cost with its
# services' CPU not counted against it.
#
# Usage: scripts/bench-cluster.sh [output-dir]
# Environment: ROUNDS (5), PIN (1), QUICK (0; 1: one round of 3 s with 20
# users, a try), PARLEY_BIN (a parley binary to run instead of building
# this checkout; BENCH_COMMIT names its commit), DURATION (20s), USERS
# (250), INTERVAL (1s-3s), NODES (3), ONE_PORT (19650), BASE_PORT (19311:
# the cluster's first node), PG_URL (postgres://postgres@127.0.0.1:5432:
# the server where each round creates, and at the end drops, its database
# parley_bc_RUN_R), and cluster.sh's PARLEY_BROKER and PARLEY_REDIS. The
# cluster's nodes keep their files in data/cluster/ (cluster.sh), which
# each round empties of node data: the script refuses to start while a
# node of cluster.sh runs.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/rounds.sh
source scripts/lib/rounds.sh
out=${1:-bench-results}
if [[ "$quick" = 1 ]]; then
	duration=${DURATION:-3s} users=${USERS:-20}
else
	duration=${DURATION:-20s} users=${USERS:-250}
fi
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
rounds_init "$tmp" "$bin"

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
	echo "== $name ($(cut -d' ' -f1-3 /proc/loadavg); $pinned)"
	"${load_cpu[@]}" "$bin" bench group --users "$users" --interval "$interval" --duration "$duration" --progress off \
		--json "$out/$name.json" --html "$out/$name.html" "$@" | tee "$out/$name.txt"
}

# run_one R: seed 002's load on a fresh single node.
run_one() {
	local data
	data=$(mktemp -d -p "$tmp")
	rounds_settle_disk "$tmp"
	"${server_cpu[@]}" "$bin" serve --addr "127.0.0.1:$one_port" --data "$data" --signup-rate 0 --login-max-wait 0 \
		--rest-send-rate 0 --log-level warn >>"$out/one-serve.log" 2>&1 &
	one_pid=$!
	for _ in $(seq 1 100); do
		curl -fsS "http://127.0.0.1:$one_port/readyz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	bench "one-$1" --url "http://127.0.0.1:$one_port" --server-pid "$one_pid"
	kill "$one_pid"
	wait "$one_pid" 2>/dev/null || true
	one_pid=
}

# run_cluster R: the same load over NODES fresh nodes, a fresh database.
run_cluster() {
	local db="parley_bc_${run_id}_$1" urls='' i
	databases+=("$db")
	rm -rf data/cluster/node[0-9]*/
	rounds_settle_disk "$tmp"
	# The nodes are cluster.sh's children: they inherit its core.
	PARLEY_BIN=$bin BASE_PORT=$base_port PARLEY_STORE="$pg/$db?sslmode=disable" \
		"${server_cpu[@]}" scripts/cluster.sh start "$nodes" --signup-rate 0 --login-max-wait 0 --rest-send-rate 0 \
		--redis-prefix "parley:bc$run_id$1:" >>"$out/cluster-serve.log" 2>&1
	for ((i = 0; i < nodes; i++)); do urls+="${urls:+,}http://127.0.0.1:$((base_port + i))"; done
	bench "cluster-$1" --nodes "$urls"
	for ((i = 1; i <= nodes; i++)); do
		curl -fsS "http://127.0.0.1:$((base_port + i - 1))/metrics" >"$out/cluster-$1.node$i.metrics" || true
	done
	scripts/cluster.sh stop >/dev/null
}

rf=$out/cluster-p99.rounds
echo "# round p99_ms_${nodes}_nodes p99_ms_one_node" >"$rf"
lost=0 pubmax=0 nocount=
for ((r = 1; r <= rounds; r++)); do
	for side in $(rounds_order "$r" one cluster); do
		"run_$side" "$r"
	done
	echo "$r $(rounds_json "$out/cluster-$r.json" .latency.p99_ms) $(rounds_json "$out/one-$r.json" .latency.p99_ms)" >>"$rf"
	for f in "$out/one-$r.json" "$out/cluster-$r.json"; do
		l=$(rounds_json "$f" '.messaging.lost + .messaging.duplicates')
		if [[ "$l" =~ ^[0-9]+$ ]]; then lost=$((lost + l)); else nocount+=" $(basename "$f")"; fi
	done
	pubmax=$(awk -v a="$pubmax" -v b="$(rounds_json "$out/cluster-$r.json" .messaging.publishes_per_message)" 'BEGIN { print (b + 0 > a + 0 ? b + 0 : a + 0) }')
done

echo "== summary (results in $out/)"
rounds_summary "$out" cluster-p99 "$rf" "cluster: seed 002's group load, $nodes nodes (PostgreSQL, RabbitMQ, Redis) against one (SQLite)" \
	"p99 (ms)" "$nodes nodes" "one node" "≤ 1.50" "lost + duplicates $lost${nocount:+ (no count in$nocount)}; publishes a message ≤ $pubmax (goal ≤ $((nodes - 1)))" \
	"$(rounds_command scripts/bench-cluster.sh ROUNDS="$rounds" DURATION="$duration" USERS="$users" INTERVAL="$interval" NODES="$nodes")" |
	tee "$out/summary.txt"
