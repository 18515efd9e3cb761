#!/usr/bin/env bash
# cluster.sh starts N Parley nodes on one machine against local PostgreSQL,
# RabbitMQ and Redis (docs/cluster.md), and stops them again.
#
#   scripts/cluster.sh start [N] [serve flags...]
#                                  build, then start N nodes (default 3) on
#                                  127.0.0.1:BASE_PORT ... BASE_PORT+N-1, and
#                                  write data/cluster/nginx.conf for them
#   scripts/cluster.sh stop        stop the nodes this script started
#   scripts/cluster.sh status      show each node's /readyz
#   scripts/cluster.sh nginx-conf [N]
#                                  print deploy/nginx.conf for N nodes at
#                                  BASE_PORT (listening on NGINX_LISTEN)
#   scripts/cluster.sh prometheus [N]
#                                  print deploy/prometheus.yml for N nodes
#
# The services come from the environment, with local defaults:
#   PARLEY_STORE   postgres://postgres@127.0.0.1:5432/parley_cluster?sslmode=disable
#                  (its database is created when missing, whatever its name)
#   PARLEY_BROKER  amqp://guest:guest@127.0.0.1:5672/
#   PARLEY_REDIS   redis://127.0.0.1:6379/0
#   BASE_PORT      8081: the first node's port. start remembers it (and N)
#                  in data/cluster/cluster.env, so that status and stop need
#                  it no more
#   NGINX_LISTEN   nginx's address, 127.0.0.1:BASE_PORT-1 (127.0.0.1:8080)
#   NGINX_UPSTREAMS  the nodes nginx balances over, space-separated
#                  (default: the N nodes on 127.0.0.1)
#   PARLEY_BIN     a parley binary to start instead of building one (to
#                  compare two builds in one session)
# Logs and pid files go to ./data/cluster/; each node's first lines name the
# store, broker and Redis it uses (without passwords). Put nginx in front for
# one address:
#   mkdir -p /tmp/parley-nginx && nginx -c "$PWD/data/cluster/nginx.conf" -p /tmp/parley-nginx/
# or drive the nodes directly with
#   parley bench group --nodes http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

dir=data/cluster
bin="$dir/parley"
# What start remembered, unless given again.
if [[ -f "$dir/cluster.env" && -z "${BASE_PORT:-}" ]]; then
  # shellcheck disable=SC1091
  source "$dir/cluster.env"
fi
export PARLEY_STORE="${PARLEY_STORE:-postgres://postgres@127.0.0.1:5432/parley_cluster?sslmode=disable}"
export PARLEY_BROKER="${PARLEY_BROKER:-amqp://guest:guest@127.0.0.1:5672/}"
export PARLEY_REDIS="${PARLEY_REDIS:-redis://127.0.0.1:6379/0}"
base_port="${BASE_PORT:-8081}"

# nginx_conf N: deploy/nginx.conf with its upstream servers and listen
# address replaced by this cluster's.
nginx_conf() {
  local n=${1:-${NODES:-3}} i ups
  ups="${NGINX_UPSTREAMS:-}"
  if [[ -z "$ups" ]]; then
    for ((i = 0; i < n; i++)); do ups+="127.0.0.1:$((base_port + i)) "; done
  fi
  awk -v ups="$ups" -v listen="${NGINX_LISTEN:-127.0.0.1:$((base_port - 1))}" '
    /^ *server 127\.0\.0\.1:[0-9]+ / {
      if (!done) {
        match($0, /^ */); indent = substr($0, 1, RLENGTH)
        rest = $0; sub(/^ *server [^ ]+ /, "", rest)
        k = split(ups, a, " ")
        for (j = 1; j <= k; j++) print indent "server " a[j] " " rest
        done = 1
      }
      next
    }
    /^ *listen 127\.0\.0\.1:8080;/ { sub(/127\.0\.0\.1:8080/, listen) }
    { print }
  ' deploy/nginx.conf
}

# prometheus_conf N: deploy/prometheus.yml for this cluster's nodes.
prometheus_conf() {
  local n=${1:-${NODES:-3}} i targets=""
  for ((i = 0; i < n; i++)); do targets+="${targets:+, }\"127.0.0.1:$((base_port + i))\""; done
  sed "s|targets: \[.*\]|targets: [$targets]|" deploy/prometheus.yml
}

# ensure_database: create the store URL's database when it is missing,
# connecting to the server's "postgres" database with the same URL.
ensure_database() {
  command -v psql >/dev/null || return 0
  [[ "$PARLEY_STORE" == postgres://* || "$PARLEY_STORE" == postgresql://* ]] || return 0
  local base="${PARLEY_STORE%%\?*}" query="" name admin
  [[ "$PARLEY_STORE" == *\?* ]] && query="?${PARLEY_STORE#*\?}"
  name="${base##*/}"
  [[ -n "$name" && "$name" != "$base" ]] || return 0
  admin="${base%/*}/postgres$query"
  if ! psql "$admin" -tAc "SELECT 1 FROM pg_database WHERE datname = '$name'" | grep -q 1; then
    psql "$admin" -qc "CREATE DATABASE \"$name\"" && echo "created database $name"
  fi
}

start() {
  local n=${1:-3} i port
  mkdir -p "$dir"
  if [[ -n "${PARLEY_BIN:-}" ]]; then
    cp "$PARLEY_BIN" "$bin"
  else
    go build -tags sqlite_fts5 -ldflags "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)" -o "$bin" ./cmd/parley
  fi
  ensure_database
  printf 'BASE_PORT=%q\nNODES=%q\n' "$base_port" "$n" >"$dir/cluster.env"
  NODES=$n nginx_conf "$n" >"$dir/nginx.conf"
  for ((i = 1; i <= n; i++)); do
    port=$((base_port + i - 1))
    if [[ -f "$dir/node$i.pid" ]] && kill -0 "$(cat "$dir/node$i.pid")" 2>/dev/null; then
      echo "node$i: already running (pid $(cat "$dir/node$i.pid"))"
      continue
    fi
    # A cluster for development and load tests on loopback: nginx in front
    # is a trusted proxy, and the load generator signs up every user from
    # one address, so sign-ups are not limited. Extra arguments come last
    # and win.
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
  echo "nginx: $dir/nginx.conf (listens on ${NGINX_LISTEN:-127.0.0.1:$((base_port - 1))})"
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
    printf 'node%s (pid %s, 127.0.0.1:%s): ' "$i" "$(cat "$f")" "$port"
    curl -sS "http://127.0.0.1:$port/readyz" 2>&1 | tr '\n' ' '; echo
  done
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  nginx-conf) shift; nginx_conf "$@" ;;
  prometheus) shift; prometheus_conf "$@" ;;
  *) sed -n '2,35p' "$0"; exit 2 ;;
esac
