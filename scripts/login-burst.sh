#!/usr/bin/env bash
# login-burst.sh checks that right passwords are never refused as failed
# logins (issue 27): it starts `parley serve` (PARLEY, default `parley` on
# the PATH) on a free loopback port with a fresh --data and --signup-rate 0,
# signs up N users (default 100), then posts their N right-password
# POST /api/tokens at once from 127.0.0.1, one address, and prints how many
# got each status (want: N × 201), and the server's login refusals.
#
#   go build -o /tmp/parley ./cmd/parley && PARLEY=/tmp/parley scripts/login-burst.sh [N]
set -euo pipefail

PARLEY=${PARLEY:-parley}
N=${1:-100}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data=$(mktemp -d)
out=$(mktemp -d)
"$PARLEY" serve --addr "127.0.0.1:$port" --data "$data" --signup-rate 0 >"$out/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$data" "$out"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 100); do
	curl -fs -o /dev/null "$base/readyz" && break
	sleep 0.1
done

for i in $(seq -w 1 "$N"); do
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
		-d "{\"name\":\"burst$i\",\"password\":\"correct horse\"}" "$base/api/users")
	[ "$code" = 201 ] || { echo "sign-up of burst$i: $code" >&2; exit 1; }
done

# One curl process makes all N logins at once (--parallel, one transfer
# per user, --parallel-immediate: every connection is opened at the start).
args=()
for i in $(seq -w 1 "$N"); do
	[ ${#args[@]} -eq 0 ] || args+=(--next)
	args+=(-s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json'
		-d "{\"name\":\"burst$i\",\"password\":\"correct horse\"}" "$base/api/tokens")
done
start=$(date +%s.%N)
curl --no-progress-meter --parallel --parallel-immediate --parallel-max "$N" "${args[@]}" >"$out/logins"
end=$(date +%s.%N)
sort "$out/logins" | uniq -c | awk '{ print $1 " × " $2 }'
awk -v n="$N" -v s="$start" -v e="$end" 'BEGIN { printf "%d logins in %.2f s\n", n, e - s }'
curl -s "$base/metrics" | grep -E '^parley_http_limited_total\{limit="login' || true
