#!/usr/bin/env bash
# bench-rest.sh compares Parley's hot REST reads with a trivial net/http
# handler that sends the same bytes (issue 16, goal 4), in one run on the
# same machine, alternating between the two with the same load generator:
#
#   rooms    GET /api/me/rooms: the room list of a member of ROOMS rooms,
#            each with a last message
#   newest   GET /api/rooms/ID/messages?limit=50: the newest page of a
#            room of MESSAGES messages (from the cache of recent messages)
#   older    GET /api/rooms/ID/messages?limit=50&before=101: an older
#            page (from the history cache's blocks, read from SQLite once
#            before the run)
#
# The baseline (cmd/httpmirror) fetches each answer once from the running
# Parley, with the token, and serves the status, headers (all but Date,
# which both servers write per response; X-Request-Id is the one Parley
# generated for that request) and body from a bare http.HandlerFunc via
# http.Serve.
#
# Parley runs with its defaults (SQLite, --sync full, the HTTP timeouts,
# the metrics, --log-level info) plus --signup-rate 0 and
# --rest-send-rate 0 for the seeding. wrk runs `-c CONNS -t 2 -d DURATION
# --latency` with the Authorization header, against Parley then the
# baseline, for each endpoint, ROUNDS times; each line gives req/s, p50,
# p99 and non-2xx responses, and the summary the ratios Parley/baseline of
# each round (req/s: ≥ 0.9 is the goal; p99: ≤ 1.2) and of the server's
# CPU time per request (user + system, from /proc: the figure that other
# load on the machine disturbs least).
#
# Rounds and pinning (scripts/lib/rounds.sh): ROUNDS rounds (5), each with
# a fresh Parley process on the seeded data and a fresh baseline fetching
# from it, Parley measured first in odd rounds and the baseline first in
# even ones; the server under test on core 0 and wrk on core 1 (PIN=1, the
# default; PIN=0 pins nothing). Per endpoint, the median ratios of req/s and
# p99 with their spread and every round's figures are printed and saved as
# OUT/rest-ENDPOINT-rps.summary.json and rest-ENDPOINT-p99.summary.json
# (cmd/benchtable), each round's CPU-per-request ratio in their note.
#
# Usage: scripts/bench-rest.sh [output-dir]
# Environment: ROUNDS (5), PIN (1), QUICK (0; 1: one round of 2 s, 50
# connections, 3 rooms: a try), DURATION (10s), CONNS (1000), ROOMS (20),
# MESSAGES (400), ENDPOINTS ("rooms newest older"), PARLEY_PORT (8094),
# MIRROR_PORT (8095), DEBUG_PORT and MIRROR_DEBUG_PORT (empty: no pprof;
# else Parley, the baseline, serves it there), PARLEY_FLAGS, PARLEY_BIN (a
# prebuilt binary to use instead of building ./cmd/parley; BENCH_COMMIT
# names its commit), PARLEY_REPO (the checkout to build
# from; default: the one holding the script).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "${PARLEY_REPO:-$here/..}"
# shellcheck source=scripts/lib/rounds.sh
source "$here/lib/rounds.sh"
out=${1:-bench-results}
if [[ "$quick" = 1 ]]; then
	duration=${DURATION:-2s} conns=${CONNS:-50} nrooms=${ROOMS:-3}
else
	duration=${DURATION:-10s} conns=${CONNS:-1000} nrooms=${ROOMS:-20}
fi
nmsgs=${MESSAGES:-400}
endpoints=${ENDPOINTS:-"rooms newest older"}
port=${PARLEY_PORT:-8094}
mport=${MIRROR_PORT:-8095}
mkdir -p "$out"
(( nmsgs >= 300 )) || { echo "MESSAGES must be at least 300 (the older page is seqs 51-100, below the 200 recent)" >&2; exit 1; }

tmp=$(mktemp -d)
parley_pid='' mirror_pid=''
cleanup() {
	for p in $parley_pid $mirror_pid; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ -n "${PARLEY_BIN:-}" ]; then
	bin=$PARLEY_BIN
else
	echo "== building parley and httpmirror"
	bin=$tmp/parley
	go build -o "$bin" ./cmd/parley
fi
go build -o "$tmp/httpmirror" ./cmd/httpmirror
rounds_init "$tmp" "$bin"

await() { # url
	for _ in $(seq 1 100); do
		curl -fsS "$1" >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "$1 did not answer" >&2
	exit 1
}

debug=()
[ -n "${DEBUG_PORT:-}" ] && debug=(--debug-addr "127.0.0.1:$DEBUG_PORT")
base=http://127.0.0.1:$port
# start_parley: a fresh Parley process on the (seeded) data directory.
start_parley() {
	# shellcheck disable=SC2086
	"${server_cpu[@]}" "$bin" serve --addr "127.0.0.1:$port" --data "$tmp/data" \
		--signup-rate 0 --rest-send-rate 0 "${debug[@]}" ${PARLEY_FLAGS:-} 2>>"$out/rest-parley.log" &
	parley_pid=$!
	await "$base/healthz"
}
stop() { # pid
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
start_parley

post() { # path json [token]
	curl -fsS -X POST "$base$1" -H 'Content-Type: application/json' ${3:+-H "Authorization: Bearer $3"} -d "$2"
}

echo "== seeding: a member of $nrooms rooms, one of them with $nmsgs messages"
post /api/users '{"name":"bench","password":"bench-password-1"}' >/dev/null
token=$(post /api/tokens '{"name":"bench","password":"bench-password-1"}' | jq -r .token)
hist=
for i in $(seq 1 "$nrooms"); do
	id=$(post /api/rooms "{\"kind\":\"group\",\"title\":\"Room number $i of the bench\"}" "$token" | jq -r .id)
	[ -n "$hist" ] || hist=$id
	post "/api/rooms/$id/messages" "{\"body\":\"The last message of room $i, about as long as a chat line is.\",\"client_id\":\"last-$i\"}" "$token" >/dev/null
done
# The history room's messages: ~70 bytes each, in one curl per 100 so
# that seeding takes seconds (curl reuses its connection across URLs).
for ((s = 2; s <= nmsgs; s += 100)); do
	args=()
	for ((j = s; j < s + 100 && j <= nmsgs; j++)); do
		args+=(--next -fsS -o /dev/null -X POST "$base/api/rooms/$hist/messages" -H 'Content-Type: application/json'
			-H "Authorization: Bearer $token" -d "{\"body\":\"Message $j of the history room, with a few words in it.\",\"client_id\":\"m-$j\"}")
	done
	curl "${args[@]:1}"
done

declare -A path=(
	[rooms]=/api/me/rooms
	[newest]="/api/rooms/$hist/messages?limit=50"
	[older]="/api/rooms/$hist/messages?limit=50&before=101"
)
urls=()
for e in $endpoints; do
	urls+=("$base${path[$e]}")
done

mdebug=()
[ -n "${MIRROR_DEBUG_PORT:-}" ] && mdebug=(-debug-addr "127.0.0.1:$MIRROR_DEBUG_PORT")
# start_mirror: a fresh baseline, fetching its answers from the running
# Parley, checked to send the same bytes.
start_mirror() {
	: >"$tmp/mirror.out"
	"${server_cpu[@]}" "$tmp/httpmirror" -addr "127.0.0.1:$mport" "${mdebug[@]}" -H "Authorization: Bearer $token" "${urls[@]}" \
		>"$tmp/mirror.out" 2>>"$out/rest-mirror.log" &
	mirror_pid=$!
	for _ in $(seq 1 100); do grep -q ready "$tmp/mirror.out" 2>/dev/null && break; sleep 0.1; done
	grep -q ready "$tmp/mirror.out" || { echo "httpmirror did not start:" >&2; cat "$out/rest-mirror.log" >&2; exit 1; }
	for e in $endpoints; do # the same bytes but Date and X-Request-Id's value
		a=$(curl -fsS -D - -H "Authorization: Bearer $token" "$base${path[$e]}" | grep -v -i -e '^date:' -e '^x-request-id:')
		b=$(curl -fsS -D - "http://127.0.0.1:$mport${path[$e]}" | grep -v -i -e '^date:' -e '^x-request-id:')
		[ "$a" = "$b" ] || { echo "httpmirror's answer to $e differs from Parley's" >&2; diff <(echo "$a") <(echo "$b") >&2; exit 1; }
	done
}

# ms converts wrk's latency (812.00us, 3.40ms, 1.02s) to milliseconds.
ms() {
	awk -v v="$1" 'BEGIN {
		n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
		if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
		printf "%.2f", n }'
}

# cpu prints the CPU time a process has used, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run() { # name url endpoint round pid
	local f="$out/rest-$3-$1-$4.txt" c0 c1
	c0=$(cpu "$5")
	"${load_cpu[@]}" wrk -c "$conns" -t 2 -d "$duration" --latency -H "Authorization: Bearer $token" "$2" >"$f"
	c1=$(cpu "$5")
	local rps p50 p99 bad reqs us
	rps=$(awk '/^Requests\/sec:/ {print $2}' "$f")
	reqs=$(awk '/requests in/ {print $1}' "$f")
	us=$(awk -v c=$((c1 - c0)) -v n="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", c / hz * 1e6 / n }')
	p50=$(ms "$(awk '$1 == "50%" {print $2}' "$f")")
	p99=$(ms "$(awk '$1 == "99%" {print $2}' "$f")")
	bad=$(awk '/Non-2xx/ {print $NF} /Socket errors/ {print}' "$f" | tr '\n' ' ')
	printf '%-7s %-7s round %d: %10.0f req/s  p50 %8s ms  p99 %8s ms  server CPU %6s µs/req  %s(load %s)\n' \
		"$3" "$1" "$4" "$rps" "$p50" "$p99" "$us" "${bad:+$bad }" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/rest-summary.txt"
	echo "$rps $p99 $us" >"$f.sum"
}

echo "== wrk -c $conns -t 2 -d $duration --latency, $rounds rounds, $pinned, $(nproc --all) cores" | tee "$out/rest-summary.txt"
for r in $(seq 1 "$rounds"); do
	if [ "$r" -gt 1 ]; then # fresh servers each round; the first round's Parley seeded
		stop "$parley_pid"
		start_parley
	fi
	for e in $endpoints; do # warm the caches (the older page: from SQLite once)
		curl -fsS -o /dev/null -H "Authorization: Bearer $token" "$base${path[$e]}"
	done
	start_mirror
	for e in $endpoints; do
		for side in $(rounds_order "$r" parley mirror); do
			if [ "$side" = parley ]; then
				run parley "$base${path[$e]}" "$e" "$r" "$parley_pid"
			else
				run mirror "http://127.0.0.1:$mport${path[$e]}" "$e" "$r" "$mirror_pid"
			fi
		done
	done
	stop "$mirror_pid"
	mirror_pid=
done

echo "== ratios, Parley / baseline (goal: req/s ≥ 0.90, p99 ≤ 1.20; CPU/req: lower is better)" | tee -a "$out/rest-summary.txt"
declare -A title=([rooms]="REST: room list, GET /api/me/rooms" [newest]="REST: newest page, GET /api/rooms/ID/messages?limit=50"
	[older]="REST: older page, GET /api/rooms/ID/messages?limit=50&before=101")
for e in $endpoints; do
	: >"$out/rest-$e-rps.rounds"
	: >"$out/rest-$e-p99.rounds"
	cpu=
	for r in $(seq 1 "$rounds"); do
		read -r prps pp99 pus <"$out/rest-$e-parley-$r.txt.sum"
		read -r mrps mp99 mus <"$out/rest-$e-mirror-$r.txt.sum"
		echo "$r $prps $mrps" >>"$out/rest-$e-rps.rounds"
		echo "$r $pp99 $mp99" >>"$out/rest-$e-p99.rounds"
		cpu+="$(awk -v a="$pus" -v b="$mus" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') "
	done
	cmd=$(rounds_command scripts/bench-rest.sh ROUNDS="$rounds" ENDPOINTS="$e" DURATION="$duration" CONNS="$conns" ROOMS="$nrooms" MESSAGES="$nmsgs")
	note="server CPU per request, Parley / baseline, per round: ${cpu% }"
	rounds_summary "$out" "rest-$e-rps" "$out/rest-$e-rps.rounds" "${title[$e]}, wrk -c $conns" "req/s" Parley "bare handler" "≥ 0.90" "$note" "$cmd" |
		tee -a "$out/rest-summary.txt"
	rounds_summary "$out" "rest-$e-p99" "$out/rest-$e-p99.rounds" "${title[$e]}, wrk -c $conns" "p99 (ms)" Parley "bare handler" "≤ 1.20" "$note" "$cmd" |
		tee -a "$out/rest-summary.txt"
done
