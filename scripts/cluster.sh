#!/usr/bin/env bash
# cluster.sh starts N Parley nodes on one machine against local PostgreSQL,
# RabbitMQ and Redis (README, "Cluster mode"), and stops them again.
#
#   scripts/cluster.sh start [N]   build, then start N nodes (default 3) on
#                                  127.0.0.1:8081 ... 808N
#   scripts/cluster.sh stop        stop the nodes this script started
#   scripts/cluster.sh status      show each node's /readyz
#
# The services come from the environment, with local defaults:
#   PARLEY_STORE   postgres://postgres@127.0.0.1:5432/parley_cluster?sslmode=disable
#                  (the database is created when missing)
#   PARLEY_BROKER  amqp://guest:guest@127.0.0.1:5672/
#   PARLEY_REDIS   redis://127.0.0.1:6379/0
#   BASE_PORT      8081
# Logs and pid files go to ./data/cluster/. Put deploy/nginx.conf in front
# for one address (127.0.0.1:8080), or drive the nodes directly with
#   parley bench group --nodes http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

export PARLEY_STORE="${PARLEY_STORE:-postgres://postgres@127.0.0.1:5432/parley_cluster?sslmode=disable}"
export PARLEY_BROKER="${PARLEY_BROKER:-amqp://guest:guest@127.0.0.1:5672/}"
export PARLEY_REDIS="${PARLEY_REDIS:-redis://127.0.0.1:6379/0}"
base_port="${BASE_PORT:-8081}"
dir=data/cluster
bin="$dir/parley"

start() {
  local n=${1:-3} i port
  mkdir -p "$dir"
  go build -o "$bin" ./cmd/parley
  # Create the database of the default store URL when it is missing.
  if command -v psql >/dev/null && [[ "$PARLEY_STORE" == *"/parley_cluster"* ]]; then
    psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'parley_cluster'" | grep -q 1 \
      || psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE parley_cluster"
  fi
  for ((i = 1; i <= n; i++)); do
    port=$((base_port + i - 1))
    if [[ -f "$dir/node$i.pid" ]] && kill -0 "$(cat "$dir/node$i.pid")" 2>/dev/null; then
      echo "node$i: already running (pid $(cat "$dir/node$i.pid"))"
      continue
    fi
    # A cluster for development and load tests on loopback: nginx in front
    # (deploy/nginx.conf) is a trusted proxy, and the load generator signs
    # up every user from one address, so sign-ups are not limited. Extra
    # arguments come last and win.
    "$bin" serve --addr "127.0.0.1:$port" --node-id "node$i" --data "$dir/node$i" \
      --trusted-proxies 127.0.0.1 --signup-rate 0 "${@:2}" \
      >"$dir/node$i.log" 2>&1 &
    echo $! >"$dir/node$i.pid"
    echo "node$i: pid $! on 127.0.0.1:$port, log $dir/node$i.log"
  done
  for ((i = 1; i <= n; i++)); do
    port=$((base_port + i - 1))
    for _ in $(seq 1 100); do
      curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
      sleep 0.1
    done
    printf 'node%d: ' "$i"; curl -sS "http://127.0.0.1:$port/readyz" | tr '\n' ' '; echo
  done
}

stop() {
  local f pid
  for f in "$dir"/node*.pid; do
    [[ -f "$f" ]] || continue
    pid=$(cat "$f")
    # SIGTERM: graceful shutdown (the node removes its queue and presence).
    kill "$pid" 2>/dev/null && echo "stopped $(basename "$f" .pid) (pid $pid)"
    rm -f "$f"
  done
}

status() {
  local f i port
  for f in "$dir"/node*.pid; do
    [[ -f "$f" ]] || continue
    i=$(basename "$f" .pid); i=${i#node}
    port=$((base_port + i - 1))
    printf 'node%s (pid %s): ' "$i" "$(cat "$f")"
    curl -sS "http://127.0.0.1:$port/readyz" 2>&1 | tr '\n' ' '; echo
  done
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  *) sed -n '2,20p' "$0"; exit 2 ;;
esac
