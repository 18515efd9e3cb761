#!/usr/bin/env bash
# Runs the third-party client tests in this directory against a real
# server: builds parley (or uses PARLEY_BIN), starts it on a free port with
# a fresh data directory, waits for /healthz, runs node --test, stops it.
# Run `npm ci` here first. Every step is bounded by `timeout`.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/local/go/bin:$PATH"

tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    timeout 15 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

bin=${PARLEY_BIN:-}
if [ -z "$bin" ]; then
  bin="$tmp/parley"
  (cd .. && timeout 300 go build -o "$bin" ./cmd/parley)
fi

port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
addr="127.0.0.1:$port"
"$bin" serve --addr "$addr" --data "$tmp/data" --sync normal --log-level warn 2>"$tmp/server.log" &
pid=$!

# Wait for /healthz (Node's fetch: no curl needed), at most 20 s.
if ! PARLEY_URL="http://$addr" PARLEY_PID="$pid" timeout 30 node -e '
  const deadline = Date.now() + 20000;
  const alive = () => { try { process.kill(Number(process.env.PARLEY_PID), 0); return true; } catch { return false; } };
  (async () => {
    while (Date.now() < deadline && alive()) {
      try {
        const res = await fetch(process.env.PARLEY_URL + "/healthz", { signal: AbortSignal.timeout(1000) });
        if (res.ok) process.exit(0);
      } catch {}
      await new Promise((r) => setTimeout(r, 100));
    }
    process.exit(1);
  })();
'; then
  echo "parley did not answer /healthz on $addr within 20 s; its log:" >&2
  cat "$tmp/server.log" >&2
  exit 1
fi

status=0
PARLEY_URL="http://$addr" timeout 120 node --test --test-reporter=spec ./*.test.mjs || status=$?
if [ "$status" -ne 0 ]; then
  echo "client tests failed ($status); the server's log:" >&2
  cat "$tmp/server.log" >&2
fi
exit "$status"
