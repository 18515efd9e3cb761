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
# Pinning: by default nothing is pinned (wrk and the server under test
# share both cores with whatever else runs). PIN=1 runs the server under
# test on CPU 1 and wrk on CPU 0 (taskset), both servers alike.
#
# Usage: scripts/bench-rest.sh [output-dir]
# Environment: DURATION (10s), CONNS (1000), ROUNDS (3), ROOMS (20),
# MESSAGES (400), ENDPOINTS ("rooms newest older"), PARLEY_PORT (8094),
# MIRROR_PORT (8095), DEBUG_PORT and MIRROR_DEBUG_PORT (empty: no pprof;
# else Parley, the baseline, serves it there), PIN (0), PARLEY_FLAGS, PARLEY_BIN (a prebuilt binary to use
# instead of building ./cmd/parley), PARLEY_REPO (the checkout to build
# from; default: the one holding the script).
set -euo pipefail

cd "${PARLEY_REPO:-$(dirname "$0")/..}"
out=${1:-bench-results}
duration=${DURATION:-10s}
conns=${CONNS:-1000}
rounds=${ROUNDS:-3}
nrooms=${ROOMS:-20}
nmsgs=${MESSAGES:-400}
endpoints=${ENDPOINTS:-"rooms newest older"}
port=${PARLEY_PORT:-8094}
mport=${MIRROR_PORT:-8095}
pin=${PIN:-0}
mkdir -p "$out"
(( nmsgs >= 300 )) || { echo "MESSAGES must be at least 300 (the older page is seqs 51-100, below the 200 recent)" >&2; exit 1; }

tmp=$(mktemp -d)
parley_pid= mirror_pid=
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

server_cpu=() wrk_cpu=()
if [ "$pin" = 1 ]; then
	server_cpu=(taskset -c 1) wrk_cpu=(taskset -c 0)
fi

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
# shellcheck disable=SC2086
"${server_cpu[@]}" "$bin" serve --addr "127.0.0.1:$port" --data "$tmp/data" \
	--signup-rate 0 --rest-send-rate 0 "${debug[@]}" ${PARLEY_FLAGS:-} 2>"$out/rest-parley.log" &
parley_pid=$!
await "$base/healthz"

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
	curl -fsS -o /dev/null -H "Authorization: Bearer $token" "$base${path[$e]}" # warm the caches
	urls+=("$base${path[$e]}")
done

mdebug=()
[ -n "${MIRROR_DEBUG_PORT:-}" ] && mdebug=(-debug-addr "127.0.0.1:$MIRROR_DEBUG_PORT")
"${server_cpu[@]}" "$tmp/httpmirror" -addr "127.0.0.1:$mport" "${mdebug[@]}" -H "Authorization: Bearer $token" "${urls[@]}" \
	>"$tmp/mirror.out" 2>"$out/rest-mirror.log" &
mirror_pid=$!
for _ in $(seq 1 100); do grep -q ready "$tmp/mirror.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$tmp/mirror.out" || { echo "httpmirror did not start:" >&2; cat "$out/rest-mirror.log" >&2; exit 1; }
cat "$out/rest-mirror.log"
for e in $endpoints; do # the same bytes but Date and X-Request-Id's value
	a=$(curl -fsS -D - -H "Authorization: Bearer $token" "$base${path[$e]}" | grep -v -i -e '^date:' -e '^x-request-id:')
	b=$(curl -fsS -D - "http://127.0.0.1:$mport${path[$e]}" | grep -v -i -e '^date:' -e '^x-request-id:')
	[ "$a" = "$b" ] || { echo "httpmirror's answer to $e differs from Parley's" >&2; diff <(echo "$a") <(echo "$b") >&2; exit 1; }
done

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
	"${wrk_cpu[@]}" wrk -c "$conns" -t 2 -d "$duration" --latency -H "Authorization: Bearer $token" "$2" >"$f"
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

echo "== wrk -c $conns -t 2 -d $duration --latency, pin=$pin, $(nproc) cores" | tee "$out/rest-summary.txt"
for r in $(seq 1 "$rounds"); do
	for e in $endpoints; do
		run parley "$base${path[$e]}" "$e" "$r" "$parley_pid"
		run mirror "http://127.0.0.1:$mport${path[$e]}" "$e" "$r" "$mirror_pid"
	done
done

echo "== ratios, Parley / baseline (goal: req/s ≥ 0.90, p99 ≤ 1.20; CPU/req: lower is better)" | tee -a "$out/rest-summary.txt"
for e in $endpoints; do
	line="$e:"
	for r in $(seq 1 "$rounds"); do
		read -r prps pp99 pus <"$out/rest-$e-parley-$r.txt.sum"
		read -r mrps mp99 mus <"$out/rest-$e-mirror-$r.txt.sum"
		line+=$(awk -v a="$prps" -v b="$mrps" -v c="$pp99" -v d="$mp99" -v e="$pus" -v f="$mus" \
			'BEGIN { printf "  req/s %.3f p99 %.2f CPU/req %.2f |", a / b, c / d, e / f }')
	done
	echo "$line" | tee -a "$out/rest-summary.txt"
done
