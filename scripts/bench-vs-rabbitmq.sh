#!/usr/bin/env bash
# bench-vs-rabbitmq.sh runs the messaging scenarios of `parley bench`
# against Parley and against RabbitMQ's own Web-STOMP plugin, back to back
# on the same machine with the same clients and measurements:
#
#   group   seed 002's load (250 members, one message every 1–3 s each),
#           a quarter of it, and 2×, 4× and 8× that rate (8×: one message
#           every 250 ms from each member, 250,000 deliveries/s)
#   direct  seed 000's load (100 users in 1:1 rooms, 10 messages each)
#
# RabbitMQ must run locally (AMQP on 5672, guest/guest); the script enables
# rabbitmq_web_stomp (ws://127.0.0.1:15674/ws) and starts a Parley node with
# a fresh data directory on 127.0.0.1:${PARLEY_PORT:-8089}.
#
# Usage: scripts/bench-vs-rabbitmq.sh [output-dir]
# Environment: DURATION (default 30s), USERS (default 250), RATES (default
# "0.25 1 2 4 8"), PARLEY_PORT, PARLEY_SYNC (default full).
set -euo pipefail

cd "$(dirname "$0")/.."
out=${1:-bench-results}
duration=${DURATION:-30s}
users=${USERS:-250}
rates=${RATES:-"0.25 1 2 4 8"}
port=${PARLEY_PORT:-8089}
mkdir -p "$out"

echo "== enabling rabbitmq_web_stomp"
rabbitmq-plugins enable rabbitmq_web_stomp >/dev/null
for i in $(seq 1 50); do
	(exec 3<>/dev/tcp/127.0.0.1/15674) 2>/dev/null && break
	sleep 0.2
done

echo "== building parley"
bin=$(mktemp -d)/parley
go build -tags sqlite_fts5 -o "$bin" ./cmd/parley

data=$(mktemp -d)
"$bin" serve --addr "127.0.0.1:$port" --data "$data" --sync "${PARLEY_SYNC:-full}" >"$out/parley-serve.log" 2>&1 &
parley_pid=$!
cleanup() {
	kill "$parley_pid" 2>/dev/null || true
	wait "$parley_pid" 2>/dev/null || true
	rm -rf "$data"
}
trap cleanup EXIT
for i in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done

# interval returns the per-user send interval at k times seed 002's rate:
# 1–3 s at 1×; 8× is one message every 250 ms.
interval() {
	case $1 in
	8) echo 250ms ;;
	*) awk -v k="$1" 'BEGIN { printf "%dms-%dms\n", 1000 / k, 3000 / k }' ;;
	esac
}

# drain_rabbitmq waits (up to two minutes) until the broker has deleted the
# subscription queues of the last run, so that a backlog it could not
# deliver does not weigh on the next run.
drain_rabbitmq() {
	for i in $(seq 1 120); do
		n=$(rabbitmqctl -q list_queues name 2>/dev/null | grep -c '^stomp-subscription' || true)
		[ "$n" = 0 ] && return
		sleep 1
	done
	echo "rabbitmq still has $n subscription queues" >&2
}

# The broker's CPU use is read from /proc, as it has no Parley /metrics.
beam=$(pgrep -x beam.smp | head -1 || true)
rabbit=(--target rabbitmq-web-stomp --url ws://127.0.0.1:15674/ws --server-pid "${beam:-0}")

run() { # name, bench args...
	local name=$1
	shift
	echo "== $name"
	"$bin" bench "$@" --progress off --json "$out/$name.json" --html "$out/$name.html" | tee "$out/$name.txt"
}

for k in $rates; do
	iv=$(interval "$k")
	run "group-${k}x-parley" group --url "http://127.0.0.1:$port" --users "$users" --interval "$iv" --duration "$duration"
	run "group-${k}x-rabbitmq" group "${rabbit[@]}" --users "$users" --interval "$iv" --duration "$duration"
	drain_rabbitmq
done
run direct-parley direct --url "http://127.0.0.1:$port"
run direct-rabbitmq direct "${rabbit[@]}"

echo "== results in $out/"
