#!/usr/bin/env bash
# bench-vs-centrifugo.sh runs the fan-out scenarios of `parley bench`
# against Parley and against Centrifugo v6, alternating in one run on the
# same machine, with the same load generator and measurements:
#
#   group    USERS (250) members in one room at k times seed 002's load
#            (each member sends every 1–3 s at 1×, every 2000/k ms above:
#            8× = 250,000 deliveries/s, 16× = 500,000, 24× = 750,000)
#   bigroom  one room of 10,000 members, 20 of them sending every second
#            (200,000 deliveries/s); deliveries over 1 s count as late
#
# Centrifugo (go install github.com/centrifugal/centrifugo/v6@v6.9.1) runs
# with a generated config: memory engine, no history, client-side
# subscribe and publish allowed, HS256 connection tokens, on loopback.
# Parley runs with SQLite and `--sync S` for each S of SYNCS (full: every
# message is fsynced before it is delivered; normal: committed, survives a
# crash of the process, not of the machine) plus the limits a load test
# needs lifted, and PARLEY_FLAGS; and for each --stomp-write-delay of
# WRITE_DELAYS. Each variant is a side of its own against Centrifugo at
# the same load.
#
# Rounds (scripts/lib/rounds.sh): ROUNDS rounds (5), each running every
# load of RATES and then the big room; at each load, every Parley variant
# and Centrifugo, a fresh server for each run, Parley first in odd rounds
# and Centrifugo first in even ones. Pinning (PIN=1, the default): the
# server under test, Parley or Centrifugo, on core 0 (so both run with
# one core: GOMAXPROCS follows the affinity), the load generator on core 1.
# Per load and variant, the median p99 ratio Parley / Centrifugo with its
# spread and every round's p99s (with --sync full, against Centrifugo's p99
# plus Parley's own fsync p99 from parley_store_fsync_seconds: the physical
# cost of durability, issue 33 goal 1; the plain ratios in the note) are
# printed and saved as
# OUT/centrifugo-group-08x[-sync-normal][-wdD]-p99.summary.json and
# OUT/centrifugo-bigroom[...]-p99.summary.json (cmd/benchtable), with the
# losses, duplicates and (big room) late deliveries and peak RSS in a note.
#
# Usage: scripts/bench-vs-centrifugo.sh [output-dir]
# Environment: ROUNDS (5), PIN (1), QUICK (0; 1: one round, RATES 1,
# 3 s, 20 members, a big room of 200 sessions: a try), CENTRIFUGO (binary,
# default centrifugo on PATH or ~/go/bin/centrifugo), DURATION (default
# 30s), RATES (default "1 8 16 24"; empty: the big room only), USERS (250), SYNCS (default "normal
# full"), BIGROOM (default 1; 0 skips it), BIGROOM_USERS (10000),
# BIGROOM_SYNCS (full), SESSIONS_PER_USER (10: Parley signs up 1,000 users
# for 10,000 sessions), PARLEY_PORT (8089), CENTRIFUGO_PORT (8009),
# PARLEY_FLAGS, WRITE_DELAYS (default "0"), BIGROOM_WRITE_DELAYS (default:
# WRITE_DELAYS), PARLEY_BIN (a parley binary to run instead of building
# this checkout: to compare builds; BENCH_COMMIT names its commit). Each
# run of Parley leaves its server's /metrics at its end in NAME.metrics
# (the write path's stage histograms: parley_store_write_stage_seconds,
# parley_hub_stage_seconds, parley_stomp_delivery_latency_seconds,
# parley_store_fsync_seconds).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/rounds.sh
source scripts/lib/rounds.sh
out=${1:-bench-results}
if [[ "$quick" = 1 ]]; then
	duration=${DURATION:-3s} rates=${RATES-1} users=${USERS:-20}
	bigroom_users=${BIGROOM_USERS:-200} sessions=${SESSIONS_PER_USER:-2}
else
	duration=${DURATION:-30s} rates=${RATES-"1 8 16 24"} users=${USERS:-250}
	bigroom_users=${BIGROOM_USERS:-10000} sessions=${SESSIONS_PER_USER:-10}
fi
syncs=${SYNCS:-"normal full"}
bigroom_syncs=${BIGROOM_SYNCS:-full}
delays=${WRITE_DELAYS:-0}
bigroom_delays=${BIGROOM_WRITE_DELAYS:-$delays}
port=${PARLEY_PORT:-8089}
cport=${CENTRIFUGO_PORT:-8009}
centrifugo=${CENTRIFUGO:-$(command -v centrifugo || echo "$HOME/go/bin/centrifugo")}
mkdir -p "$out"
[ -x "$centrifugo" ] || {
	echo "no centrifugo binary at $centrifugo: go install github.com/centrifugal/centrifugo/v6@v6.9.1 (or set CENTRIFUGO=path)" >&2
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
rounds_init "$tmp" "$bin"

parley_pid='' cf_pid=''
cleanup() {
	for p in $parley_pid $cf_pid; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

await() { # url
	for _ in $(seq 1 100); do
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
start_parley() { # sync, write delay
	data=$(mktemp -d -p "$tmp")
	rounds_settle_disk "$tmp"
	# shellcheck disable=SC2086 # PARLEY_FLAGS is a list of flags
	"${server_cpu[@]}" "$bin" serve --addr "127.0.0.1:$port" --data "$data" --signup-rate 0 --rest-send-rate 0 \
		--stomp-max-conns 20000 --stomp-send-rate 100 --sync "$1" --stomp-write-delay "$2" \
		${PARLEY_FLAGS:-} >>"$out/parley-serve.log" 2>&1 &
	parley_pid=$!
	await "http://127.0.0.1:$port/healthz"
}
start_centrifugo() {
	rounds_settle_disk "$tmp"
	"${server_cpu[@]}" "$centrifugo" -c "$tmp/centrifugo.json" >>"$out/centrifugo.log" 2>&1 &
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
	echo "== $name ($(cut -d' ' -f1-3 /proc/loadavg); $pinned)"
	"${load_cpu[@]}" "$bin" bench "$@" --progress off --json "$out/$name.json" --html "$out/$name.html" | tee "$out/$name.txt"
}
parley_run() { # name, sync, write delay, bench args...
	local name=$1 sync=$2 wd=$3
	shift 3
	start_parley "$sync" "$wd"
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

# variant SYNC DELAY: the name part of a Parley variant ("" for the
# default, sync full without a write delay).
variant() {
	local v=
	[ "$1" = full ] || v+="-sync-$1"
	[ "$2" = 0 ] || v+="-wd$2"
	echo "$v"
}

# wdtext DELAY: a write delay in words for a title ("" for none).
wdtext() { [ "$1" = 0 ] || echo " --stomp-write-delay $1"; }

# kname K: a load's name, zero-padded so that the table sorts by load.
kname() { awk -v k="$1" 'BEGIN { printf "%02gx", k }'; }

# fsync_p99 NAME.metrics: the p99 of parley_store_fsync_seconds in ms (the
# upper bound of its bucket; set-up included), "-" without fsyncs.
fsync_p99() {
	"$benchtable" quantile -metric parley_store_fsync_seconds -q 0.99 -scale 1000 "$1"
}

# record KEY R PARLEY.json CENTRIFUGO.json [FSYNC]: a round's p99s to
# KEY.rounds (with FSYNC=1, Centrifugo's plus Parley's fsync p99: issue
# 33's bound with --sync full), and its losses, big-room figures and the
# plain p99 ratio to KEY.extra.
record() {
	local p c f=0
	p=$(rounds_json "$3" .latency.p99_ms) c=$(rounds_json "$4" .latency.p99_ms)
	[ "${5:-0}" = 1 ] && f=$(fsync_p99 "${3%.json}.metrics")
	echo "$2 $p $(awk -v c="$c" -v f="$f" 'BEGIN { if (c == "-" || f == "-") print "-"; else print c + f }')" >>"$out/$1.rounds"
	echo "$2 $c $f $(awk -v p="$p" -v c="$c" 'BEGIN { if (c + 0 > 0) printf "%.2f", p / c; else print "-" }')" >>"$out/$1.fsync"
	echo "$2 $(rounds_json "$3" '.messaging.lost + .messaging.duplicates') $(rounds_json "$4" '.messaging.lost + .messaging.duplicates')" \
		"$(rounds_json "$3" .bigroom.late) $(rounds_json "$4" .bigroom.late)" \
		"$(rounds_json "$3" '.bigroom.rss_peak_bytes / 1048576 | floor') $(rounds_json "$4" '.bigroom.rss_peak_bytes / 1048576 | floor')" >>"$out/$1.extra"
}

rm -f "$out"/*.rounds "$out"/*.extra "$out"/*.fsync
for ((r = 1; r <= rounds; r++)); do
	for k in $rates; do
		iv=$(interval "$k")
		for side in $(rounds_order "$r" parley centrifugo); do
			if [ "$side" = centrifugo ]; then
				cf_run "group-${k}x-centrifugo-r$r" group --users "$users" --interval "$iv" --duration "$duration"
				continue
			fi
			for s in $syncs; do
				for wd in $delays; do
					parley_run "group-${k}x-parley$(variant "$s" "$wd")-r$r" "$s" "$wd" \
						group --users "$users" --interval "$iv" --duration "$duration"
				done
			done
		done
		for s in $syncs; do
			for wd in $delays; do
				v=$(variant "$s" "$wd")
				f=0
				[ "$s" = full ] && f=1
				record "group-$(kname "$k")$v" "$r" "$out/group-${k}x-parley$v-r$r.json" "$out/group-${k}x-centrifugo-r$r.json" "$f"
			done
		done
	done
	if [ "${BIGROOM:-1}" != 0 ]; then
		for side in $(rounds_order "$r" parley centrifugo); do
			if [ "$side" = centrifugo ]; then
				cf_run "bigroom-centrifugo-r$r" bigroom --users "$bigroom_users" --duration "$duration"
				continue
			fi
			for s in $bigroom_syncs; do
				for wd in $bigroom_delays; do
					parley_run "bigroom-parley$(variant "$s" "$wd")-r$r" "$s" "$wd" \
						bigroom --users "$bigroom_users" --sessions-per-user "$sessions" --duration "$duration"
				done
			done
		done
		for s in $bigroom_syncs; do
			for wd in $bigroom_delays; do
				v=$(variant "$s" "$wd")
				record "bigroom$v" "$r" "$out/bigroom-parley$v-r$r.json" "$out/bigroom-centrifugo-r$r.json"
			done
		done
	fi
done

# note KEY: the losses (and the big room's late deliveries and peak RSS)
# over the rounds, from KEY.extra.
note() {
	awk '{ for (i = 2; i <= 7; i++) if ($i != "-") { s[i] += $i; if ($i > m[i]) m[i] = $i; seen[i] = 1 } }
		END {
			printf "lost + duplicates: Parley %d, Centrifugo %d", s[2], s[3]
			if (seen[4]) printf "; late (over 1 s): Parley %d, Centrifugo %d; peak RSS MiB (max): Parley %d, Centrifugo %d", s[4], s[5], m[6], m[7]
		}' "$out/$1.extra"
}

# fsync_note KEY: the fsync p99s and the plain p99 ratios, from KEY.fsync.
fsync_note() {
	awk '{ f = f (NR > 1 ? ", " : "") $3; r = r (NR > 1 ? ", " : "") $4 }
		END { printf "; fsync p99 (ms) per round: %s; p99 Parley / Centrifugo alone: %s", f, r }' "$out/$1.fsync"
}

echo "== summary (results in $out/)"
: >"$out/summary.txt"
for k in $rates; do
	for s in $syncs; do
		for wd in $delays; do
			v=$(variant "$s" "$wd")
			key="group-$(kname "$k")$v"
			b=Centrifugo fnote=
			if [ "$s" = full ]; then
				b="Centrifugo + Parley's fsync p99" fnote=$(fsync_note "$key")
			fi
			rounds_summary "$out" "centrifugo-$key-p99" "$out/$key.rounds" \
				"fan-out: seed 002's group load at ${k}×, Parley --sync $s$(wdtext "$wd") against Centrifugo (memory engine)" \
				"p99 (ms)" "Parley" "$b" "≤ 1.00" "$(note "$key")$fnote" \
				"$(rounds_command scripts/bench-vs-centrifugo.sh ROUNDS="$rounds" RATES="$k" SYNCS="$s" WRITE_DELAYS="$wd" BIGROOM=0 DURATION="$duration" USERS="$users")" |
				tee -a "$out/summary.txt"
		done
	done
done
if [ "${BIGROOM:-1}" != 0 ]; then
	for s in $bigroom_syncs; do
		for wd in $bigroom_delays; do
			v=$(variant "$s" "$wd")
			rounds_summary "$out" "centrifugo-bigroom$v-p99" "$out/bigroom$v.rounds" \
				"big room: $bigroom_users members, 20 sending every second, Parley --sync $s$(wdtext "$wd") against Centrifugo" \
				"p99 (ms)" "Parley" "Centrifugo" "≤ 1.00 (and Parley's p99 ≤ 100 ms, 0 late)" "$(note "bigroom$v")" \
				"$(rounds_command scripts/bench-vs-centrifugo.sh ROUNDS="$rounds" RATES= BIGROOM_SYNCS="$s" BIGROOM_WRITE_DELAYS="$wd" DURATION="$duration" BIGROOM_USERS="$bigroom_users" SESSIONS_PER_USER="$sessions")" |
				tee -a "$out/summary.txt"
		done
	done
fi
