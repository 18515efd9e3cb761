#!/usr/bin/env bash
# bench-vs-rabbitmq.sh runs the messaging scenarios of `parley bench`
# against Parley and against RabbitMQ's own Web-STOMP plugin, alternating
# in one run on the same machine with the same clients and measurements:
#
#   group   seed 002's load (USERS = 250 members, one message every 1–3 s
#           each), a quarter of it, and 2×, 4× and 8× that rate (8×: one
#           message every 250 ms from each member, 250,000 deliveries/s)
#   direct  seed 000's load (DIRECT_USERS = 100 users in 1:1 rooms, 10
#           messages each)
#
# RabbitMQ must run locally (AMQP on 5672, guest/guest); the script enables
# rabbitmq_web_stomp (ws://127.0.0.1:15674/ws), and disables it again at
# the end if it was not enabled before. Parley runs with SQLite and
# --sync PARLEY_SYNC (full) on 127.0.0.1:PARLEY_PORT, a fresh process and
# data directory for each run, with the limits a load test needs lifted
# (as scripts/bench-vs-centrifugo.sh) and PARLEY_FLAGS.
#
# Rounds and pinning (scripts/lib/rounds.sh): ROUNDS rounds (5), each
# running every load of RATES and then direct, Parley first in odd rounds
# and RabbitMQ first in even ones; Parley on core 0 and the load generator
# on core 1 (PIN=1, the default). RabbitMQ is the machine's running broker,
# which other work shares: it is neither restarted between runs (its
# subscription queues are drained instead, so that a backlog does not
# weigh on the next run) nor pinned (its scheduler threads may use both
# cores, and share core 1 with the load generator): the ratios favour it
# by that. Per load, the median ratio of the p99s Parley / RabbitMQ with
# its spread and every round's p99s are printed and saved as
# OUT/rabbitmq-group-08x-p99.summary.json (and rabbitmq-direct-p99), with
# the deliveries/s ratios and the losses in the note (cmd/benchtable).
#
# Usage: scripts/bench-vs-rabbitmq.sh [output-dir]
# Environment: ROUNDS (5), PIN (1), QUICK (0; 1: one round, RATES 1, 3 s,
# 20 members, 10 direct users: a try), DURATION (default 30s), USERS
# (default 250), DIRECT_USERS (100), RATES (default "0.25 1 2 4 8"),
# DIRECT (1; 0 skips it), PARLEY_PORT (8089), PARLEY_SYNC (default full),
# PARLEY_FLAGS,
# PARLEY_BIN (a parley binary to run instead of building this checkout;
# BENCH_COMMIT names its commit).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/rounds.sh
source scripts/lib/rounds.sh
out=${1:-bench-results}
if [[ "$quick" = 1 ]]; then
	duration=${DURATION:-3s} users=${USERS:-20} rates=${RATES-1} direct_users=${DIRECT_USERS:-10}
else
	duration=${DURATION:-30s} users=${USERS:-250} rates=${RATES-"0.25 1 2 4 8"} direct_users=${DIRECT_USERS:-100}
fi
[[ "$pin" = 1 ]] && pinned="Parley on core ${SERVER_CPU:-0}, load generator on core ${LOAD_CPU:-1}; RabbitMQ (the machine's broker) not pinned"
port=${PARLEY_PORT:-8089}
sync=${PARLEY_SYNC:-full}
mkdir -p "$out"

# The plugin is left as it was found: disabled again at the end when this
# script enabled it.
web_stomp_was=$(rabbitmq-plugins list -e -m 2>/dev/null | grep -cx rabbitmq_web_stomp || true)
echo "== enabling rabbitmq_web_stomp"
rabbitmq-plugins enable rabbitmq_web_stomp >/dev/null
for _ in $(seq 1 50); do
	(exec 3<>/dev/tcp/127.0.0.1/15674) 2>/dev/null && break
	sleep 0.2
done

tmp=$(mktemp -d)
bin=$tmp/parley
if [ -n "${PARLEY_BIN:-}" ]; then
	cp "$PARLEY_BIN" "$bin"
else
	echo "== building parley"
	go build -tags sqlite_fts5 -o "$bin" ./cmd/parley
fi
rounds_init "$tmp" "$bin"

parley_pid=
cleanup() {
	if [ -n "$parley_pid" ]; then
		kill "$parley_pid" 2>/dev/null || true
		wait "$parley_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	if [ "$web_stomp_was" = 0 ]; then
		echo "== disabling rabbitmq_web_stomp again"
		rabbitmq-plugins disable rabbitmq_web_stomp >/dev/null || true
	fi
}
trap cleanup EXIT

start_parley() {
	local data
	data=$(mktemp -d -p "$tmp")
	# shellcheck disable=SC2086 # PARLEY_FLAGS is a list of flags
	"${server_cpu[@]}" "$bin" serve --addr "127.0.0.1:$port" --data "$data" --sync "$sync" --signup-rate 0 \
		--rest-send-rate 0 --stomp-max-conns 20000 --stomp-send-rate 100 ${PARLEY_FLAGS:-} >>"$out/parley-serve.log" 2>&1 &
	parley_pid=$!
	for _ in $(seq 1 100); do
		curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "parley did not answer on 127.0.0.1:$port (its log: $out/parley-serve.log)" >&2
	exit 1
}
stop_parley() {
	kill "$parley_pid" 2>/dev/null || true
	wait "$parley_pid" 2>/dev/null || true
	parley_pid=
}

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
	for _ in $(seq 1 120); do
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
	echo "== $name ($(cut -d' ' -f1-3 /proc/loadavg); $pinned)"
	"${load_cpu[@]}" "$bin" bench "$@" --progress off --json "$out/$name.json" --html "$out/$name.html" | tee "$out/$name.txt"
}

# pair NAME R SCENARIO ARGS...: one run of each side, in the round's order.
pair() {
	local name=$1 r=$2 side
	shift 2
	for side in $(rounds_order "$r" parley rabbitmq); do
		if [ "$side" = parley ]; then
			start_parley
			run "$name-parley-r$r" "$@" --url "http://127.0.0.1:$port" --server-pid "$parley_pid"
			stop_parley
		else
			run "$name-rabbitmq-r$r" "$@" "${rabbit[@]}"
			drain_rabbitmq
		fi
	done
	echo "$r $(rounds_json "$out/$name-parley-r$r.json" .latency.p99_ms) $(rounds_json "$out/$name-rabbitmq-r$r.json" .latency.p99_ms)" >>"$out/$name.rounds"
	echo "$r $(rounds_json "$out/$name-parley-r$r.json" .messaging.deliveries_per_s) $(rounds_json "$out/$name-rabbitmq-r$r.json" .messaging.deliveries_per_s)" \
		"$(rounds_json "$out/$name-parley-r$r.json" '.messaging.lost + .messaging.duplicates') $(rounds_json "$out/$name-rabbitmq-r$r.json" '.messaging.lost + .messaging.duplicates')" >>"$out/$name.extra"
}

# kname K: a load's name, zero-padded so that the table sorts by load.
kname() { awk -v k="$1" 'BEGIN { printf "%02gx", k }'; }

# note NAME: deliveries/s ratios per round and the losses, from NAME.extra.
note() {
	awk '{ r = r (NR > 1 ? ", " : "") ($3 > 0 ? sprintf("%.2f", $2 / $3) : "-"); lp += $4; lr += $5 }
		END { printf "deliveries/s Parley / RabbitMQ per round: %s; lost + duplicates: Parley %d, RabbitMQ %d", r, lp, lr }' "$out/$1.extra"
}

rm -f "$out"/*.rounds "$out"/*.extra
for ((r = 1; r <= rounds; r++)); do
	for k in $rates; do
		pair "group-$(kname "$k")" "$r" group --users "$users" --interval "$(interval "$k")" --duration "$duration"
	done
	[ "${DIRECT:-1}" = 0 ] || pair direct "$r" direct --users "$direct_users"
done

echo "== summary (results in $out/)"
: >"$out/summary.txt"
for k in $rates; do
	name=group-$(kname "$k")
	rounds_summary "$out" "rabbitmq-$name-p99" "$out/$name.rounds" \
		"seed 002's group load at ${k}×, $users members, Parley --sync $sync against RabbitMQ Web-STOMP (not pinned)" \
		"p99 (ms)" Parley RabbitMQ "≤ 1.00" "$(note "$name")" \
		"$(rounds_command scripts/bench-vs-rabbitmq.sh ROUNDS="$rounds" RATES="$k" DIRECT=0 USERS="$users" DURATION="$duration" PARLEY_SYNC="$sync")" |
		tee -a "$out/summary.txt"
done
if [ "${DIRECT:-1}" != 0 ]; then
	rounds_summary "$out" rabbitmq-direct-p99 "$out/direct.rounds" \
		"seed 000's direct chat, $direct_users users × 10 messages, Parley --sync $sync against RabbitMQ Web-STOMP (not pinned)" \
		"p99 send → peer (ms)" Parley RabbitMQ "≤ 1.00" "$(note direct)" \
		"$(rounds_command scripts/bench-vs-rabbitmq.sh ROUNDS="$rounds" RATES= DIRECT_USERS="$direct_users" PARLEY_SYNC="$sync")" |
		tee -a "$out/summary.txt"
fi
