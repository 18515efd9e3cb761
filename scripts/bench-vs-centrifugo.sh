#!/usr/bin/env bash
# bench-vs-centrifugo.sh runs the fan-out scenarios of `parley bench`
# against Parley and against Centrifugo v6, alternating in one run on the
# same machine, with the same load generator and measurements:
#
#   group    250 members in one room at k times seed 002's load (each
#            member sends every 1–3 s at 1×, every 2000/k ms above:
#            8× = 250,000 deliveries/s, 16× = 500,000, 24× = 750,000)
#   bigroom  one room of 10,000 members, 20 of them sending every second
#            (200,000 deliveries/s); deliveries over 1 s count as late
#
# Centrifugo (go install github.com/centrifugal/centrifugo/v6@v6.9.1) runs
# with a generated config: memory engine, no history, client-side
# subscribe and publish allowed, HS256 connection tokens, on loopback.
# Parley runs with its defaults (SQLite, --sync full: every message is
# committed before it is delivered) plus the limits a load test needs
# lifted, and PARLEY_FLAGS; each run of Parley is repeated for each
# --stomp-write-delay of WRITE_DELAYS (runs named …-parley-wdD), before the
# run of Centrifugo at the same load.
#
# Usage: scripts/bench-vs-centrifugo.sh [output-dir]
# Environment: CENTRIFUGO (binary, default centrifugo on PATH or
# ~/go/bin/centrifugo), DURATION (default 30s), RATES (default "1 8 16 24"),
# BIGROOM (default 1; 0 skips it), BIGROOM_USERS (10000), SESSIONS_PER_USER
# (10: Parley signs up 1,000 users for 10,000 sessions), PARLEY_PORT (8089),
# CENTRIFUGO_PORT (8009), PARLEY_FLAGS, WRITE_DELAYS (default "0"),
# BIGROOM_WRITE_DELAYS (default: WRITE_DELAYS), PARLEY_BIN (a parley binary
# to run instead of building this checkout: to compare builds). Each run of
# Parley leaves its server's /metrics at its end in NAME.metrics (the write
# path's stage histograms: parley_store_write_stage_seconds,
# parley_hub_stage_seconds, parley_stomp_delivery_latency_seconds).
set -euo pipefail

cd "$(dirname "$0")/.."
out=${1:-bench-results}
duration=${DURATION:-30s}
rates=${RATES:-"1 8 16 24"}
port=${PARLEY_PORT:-8089}
cport=${CENTRIFUGO_PORT:-8009}
centrifugo=${CENTRIFUGO:-$(command -v centrifugo || echo "$HOME/go/bin/centrifugo")}
mkdir -p "$out"
[ -x "$centrifugo" ] || {
	echo "no centrifugo binary at $centrifugo: go install github.com/centrifugal/centrifugo/v6@v6.9.1" >&2
	exit 1
}

tmp=$(mktemp -d)
bin=$tmp/parley
if [ -n "${PARLEY_BIN:-}" ]; then
	cp "$PARLEY_BIN" "$bin"
else
	echo "== building parley"
	go build -o "$bin" ./cmd/parley
fi

parley_pid= cf_pid=
cleanup() {
	for p in $parley_pid $cf_pid; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

await() { # url
	for i in $(seq 1 100); do
		curl -fsS "$1" >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "$1 did not answer" >&2
	exit 1
}

secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$tmp/centrifugo.json" <<JSON
{
  "http_server": {"address": "127.0.0.1", "port": $cport},
  "log": {"level": "error"},
  "engine": {"type": "memory"},
  "health": {"enabled": true},
  "client": {"token": {"hmac_secret_key": "$secret"}},
  "channel": {"without_namespace": {"allow_subscribe_for_client": true, "allow_publish_for_client": true}}
}
JSON

# Each server is started afresh for each run, so that one run's memory and
# backlog do not weigh on the next.
start_parley() {
	data=$(mktemp -d -p "$tmp")
	# shellcheck disable=SC2086 # PARLEY_FLAGS is a list of flags
	"$bin" serve --addr "127.0.0.1:$port" --data "$data" --signup-rate 0 --rest-send-rate 0 \
		--stomp-max-conns 20000 --stomp-send-rate 100 ${PARLEY_FLAGS:-} >>"$out/parley-serve.log" 2>&1 &
	parley_pid=$!
	await "http://127.0.0.1:$port/healthz"
}
start_centrifugo() {
	"$centrifugo" -c "$tmp/centrifugo.json" >>"$out/centrifugo.log" 2>&1 &
	cf_pid=$!
	await "http://127.0.0.1:$cport/health"
}
stop() { # pid
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

run() { # name, bench args...
	local name=$1
	shift
	echo "== $name ($(cut -d' ' -f1-3 /proc/loadavg))"
	"$bin" bench "$@" --progress off --json "$out/$name.json" --html "$out/$name.html" | tee "$out/$name.txt"
}
parley_run() { # name, bench args...
	local name=$1
	shift
	start_parley
	run "$name" "$@" --url "http://127.0.0.1:$port" --server-pid "$parley_pid"
	curl -fsS "http://127.0.0.1:$port/metrics" >"$out/$name.metrics"
	# Socket writes against deliveries: the frames each write carried.
	awk '/^parley_stomp_(writes|deliveries)_total / { v[$1] = $2 }
			END { if (v["parley_stomp_writes_total"] > 0) printf "  writes        %d socket writes, %.2f deliveries each (set-up included)\n",
				v["parley_stomp_writes_total"], v["parley_stomp_deliveries_total"] / v["parley_stomp_writes_total"] }' "$out/$name.metrics" |
		tee -a "$out/$name.txt"
	stop "$parley_pid"
	parley_pid=
}
cf_run() { # name, bench args...
	local name=$1
	shift
	start_centrifugo
	run "$name" "$@" --target centrifugo --url "ws://127.0.0.1:$cport/connection/websocket" \
		--centrifugo-secret "$secret" --server-pid "$cf_pid"
	stop "$cf_pid"
	cf_pid=
}

# interval returns the per-member send interval at k times seed 002's
# rate: 1–3 s at 1×, else one message every 2000/k ms (8×: 250 ms).
interval() {
	case $1 in
	1) echo 1s-3s ;;
	*) awk -v k="$1" 'BEGIN { printf "%dms\n", 2000 / k }' ;;
	esac
}

delays=${WRITE_DELAYS:-0}
for k in $rates; do
	iv=$(interval "$k")
	for wd in $delays; do
		PARLEY_FLAGS="${PARLEY_FLAGS:-} --stomp-write-delay $wd" \
			parley_run "group-${k}x-parley-wd$wd" group --users 250 --interval "$iv" --duration "$duration"
	done
	cf_run "group-${k}x-centrifugo" group --users 250 --interval "$iv" --duration "$duration"
done
if [ "${BIGROOM:-1}" != 0 ]; then
	users=${BIGROOM_USERS:-10000}
	for wd in ${BIGROOM_WRITE_DELAYS:-$delays}; do
		PARLEY_FLAGS="${PARLEY_FLAGS:-} --stomp-write-delay $wd" \
			parley_run "bigroom-parley-wd$wd" bigroom --users "$users" --sessions-per-user "${SESSIONS_PER_USER:-10}" --duration "$duration"
	done
	cf_run bigroom-centrifugo bigroom --users "$users" --duration "$duration"
fi

echo "== results in $out/"
