#!/usr/bin/env bash
# bench-backup.sh measures `parley backup` against a node under load
# (issue 29): how fast it copies (MB/s and messages/s of the snapshot),
# and what it costs the sends: the receipt p99 of `parley bench direct`
# while backups run back to back, against the same load without them.
#
# A fresh data directory is seeded (below), then `parley serve
# --signup-rate 0` runs on it, a fresh process for each run (SQLite, --sync full, its defaults
# otherwise, but for the send limits, out of the load's way). Then ROUNDS
# pairs of rounds alternate: each runs the same `parley bench direct
# --users USERS --rate RATE --duration DURATION`, one of a pair with
# `parley backup` run back to back (the snapshots kept to the end) from
# the load's start to its end, at most 1,000 times: second in odd pairs,
# first in even ones, so that what the order does cancels out. Each round prints
# the receipt p99 and p50 (send to durable commit), the delivery p99 and
# the store's fsync p50 and p99 (parley_store_fsync_seconds, bucket bounds,
# from the server's /metrics at the round's end, kept as
# round-R-MODE.metrics); each backup its bytes, messages and time.
#
# The median of the pairs' p99 ratios (with backups / without) with its
# spread and each pair's figures are printed and saved as
# OUT/backup-p99.summary.json (scripts/lib/rounds.sh, cmd/benchtable).
#
# Pinning (scripts/lib/rounds.sh): the server and the backups on CPU 0,
# the load generator on CPU 1 (taskset), unless PIN=0. BACKUP_WRAP runs each backup under a command,
# for example "nice -n 19 ionice -c 3" (lowest CPU priority, idle I/O);
# BACKUP_ARGS are more flags of parley backup, for example "--vacuum" or
# "--backup-rate 0";
# BACKUP_DIR is where the snapshots go (default: beside the data, on the
# same disk; /dev/shm tells the disk's share of the cost from the CPU's).
#
# Needs the sqlite3 shell with FTS5 (3.42 or later once the schema sets
# the index's secure-delete option) and python3.
#
# Usage: scripts/bench-backup.sh [output-dir]
# Environment: ROUNDS (5), PIN (1), QUICK (0; 1: one pair of 3 s, 6 users,
# 4 rooms of 500 messages: a try), USERS (40), RATE (10 messages/s per user),
# DURATION (15s), SEED_ROOMS (20), SEED_MESSAGES (10000 per room),
# PARLEY_PORT (8096), PARLEY_BIN (a prebuilt binary
# instead of building ./cmd/parley; BENCH_COMMIT names its commit), PARLEY_REPO (the checkout to build
# from; default: the one holding the script).
set -euo pipefail

out=$(realpath -m "${1:-bench-results}")
here=$(cd "$(dirname "$0")" && pwd)
cd "${PARLEY_REPO:-$here/..}"
# shellcheck source=scripts/lib/rounds.sh
source "$here/lib/rounds.sh"
if [[ "$quick" = 1 ]]; then
	users=${USERS:-6} duration=${DURATION:-3s} seed_rooms=${SEED_ROOMS:-4} seed_msgs=${SEED_MESSAGES:-500}
else
	users=${USERS:-40} duration=${DURATION:-15s} seed_rooms=${SEED_ROOMS:-20} seed_msgs=${SEED_MESSAGES:-10000}
fi
rate=${RATE:-10}
port=${PARLEY_PORT:-8096}
read -r -a backup_wrap <<<"${BACKUP_WRAP:-}"
read -r -a backup_args <<<"${BACKUP_ARGS:-}"
backup_dir=${BACKUP_DIR:-}
mkdir -p "$out"

tmp=$(mktemp -d)
backup_dir=${backup_dir:-$tmp}
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -f "$backup_dir"/snap-*.db
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ -n "${PARLEY_BIN:-}" ]; then
	bin=$PARLEY_BIN
else
	echo "== building parley"
	bin=$tmp/parley
	GOFLAGS="${GOFLAGS:--tags=sqlite_fts5}" go build -o "$bin" ./cmd/parley
fi
rounds_init "$tmp" "$bin"

# The seed: SEED_ROOMS rooms of SEED_MESSAGES messages each (~200-byte
# bodies), written with the sqlite3 shell into a database `parley
# migrate` created, and the full-text index rebuilt: what a node that has
# served for a while holds, in seconds instead of an hour of load.
echo "== seeding: $seed_rooms rooms × $seed_msgs messages"
"$bin" migrate --data "$tmp/data" >/dev/null
sqlite3 "$tmp/data/parley.db" <<SQL
INSERT INTO users (id, name, password_hash, created_at) VALUES ('seeduser00000000000000000a', 'seeder', x'00', 1700000000000000);
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < $seed_rooms)
INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, last_change, num)
SELECT printf('seedroom%018d', n), 'group', 'seed ' || n, 0, 1, $seed_msgs, 1700000000000000, 1700000000000000, 0, n FROM r;
INSERT INTO members (room_id, user_id, read_seq, joined_at, role)
SELECT id, 'seeduser00000000000000000a', 0, 1700000000000000, 'owner' FROM rooms;
WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < $seed_msgs)
INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, change)
SELECT r.id, s.n, printf('seedmsg%05d%014d', r.num, s.n), 'seeduser00000000000000000a', 'seeder',
	printf('message %d of room %d about topic%d, word%d and term%d; ref %s: ', s.n, r.num, s.n % 97, (s.n * 7919) % 1013, (s.n * 104729) % 4999, lower(hex(randomblob(8))))
	|| 'the quick brown fox jumps over the lazy dog while the team ships the release',
	'', 1700000000000000 + s.n, 0
FROM rooms r, s ORDER BY r.id, s.n;
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
-- The index holds every seeded message: the search indexer starts there.
INSERT OR REPLACE INTO search_position (room_id, seq) SELECT id, last_seq FROM rooms;
SQL
stat -c %s "$tmp/data/parley.db" | awk '{printf "seed database: %.1f MB\n", $1 / 1e6}'

url=http://127.0.0.1:$port
# start_server: a fresh server process on the data (each round has one).
start_server() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rounds_settle_disk "$tmp"
	"${server_cpu[@]}" "$bin" serve --addr "127.0.0.1:$port" --data "$tmp/data" \
		--signup-rate 0 --stomp-send-rate 1000 --rest-send-rate 0 2>>"$out/serve.log" &
	server_pid=$!
	for _ in $(seq 100); do
		"$bin" healthcheck --addr "127.0.0.1:$port" --ready >/dev/null 2>&1 && break
		sleep 0.1
	done
}

# backups runs parley backup back to back while the process $1 lives,
# appending each one's line to $2 (round $3's snapshots, snap-$3-N.db). The
# snapshots are kept until the whole run has ended (cleanup): on a
# filesystem mounted with online discard, as this machine's is, deleting
# an 80 MB file stalls every fdatasync on it for 20-26 ms, and the
# deletions of a round's snapshots after it slowed the round that followed
# (docs/operations.md, "Backups"): the cost of deleting, not of the backup.
# A run of 5 pairs keeps about 1.5 GB of them.
backups() {
	for i in $(seq 1000); do
		kill -0 "$1" 2>/dev/null || return 0
		"${server_cpu[@]}" "${backup_wrap[@]}" "$bin" backup "${backup_args[@]}" --data "$tmp/data" "$backup_dir/snap-$3-$i.db" >>"$2"
	done
}

# p99 of a JSON report: receipt p99, receipt p50, delivery p99 (ms).
figures() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["messaging"]["receipt_latency"]; print("%.2f %.2f %.2f %d" % (r["p99_ms"], r["p50_ms"], d["latency"]["p99_ms"], d["error_count"]))' "$1"
}

p99_backup='' p99_none=''
printf '%-8s %-6s %12s %12s %13s %6s %-7s %9s %9s\n' round backup receipt_p99 receipt_p50 delivery_p99 errors backups fsync_p50 fsync_p99
echo "# pair receipt_p99_ms_with_backups receipt_p99_ms_without" >"$out/backup-p99.rounds"
for r in $(seq "$rounds"); do
	for mode in $(rounds_order "$r" none backup); do
		json=$out/round-$r-$mode.json
		start_server
		"${load_cpu[@]}" "$bin" bench direct --url "$url" --users "$users" --rate "$rate" --loops 1000000 \
			--duration "$duration" --ramp-up 1s --progress off --json "$json" >"$out/round-$r-$mode.txt" 2>&1 &
		load_pid=$!
		n=0
		if [ "$mode" = backup ]; then
			: >"$out/round-$r-backups.txt"
			backups "$load_pid" "$out/round-$r-backups.txt" "$r"
			n=$(wc -l <"$out/round-$r-backups.txt")
		fi
		wait "$load_pid"
		curl -fsS "$url/metrics" >"$out/round-$r-$mode.metrics" || true
		read -r p99 p50 d99 errs < <(figures "$json")
		f50=$("$benchtable" quantile -metric parley_store_fsync_seconds -q 0.5 -scale 1000 "$out/round-$r-$mode.metrics" 2>/dev/null || echo -)
		f99=$("$benchtable" quantile -metric parley_store_fsync_seconds -q 0.99 -scale 1000 "$out/round-$r-$mode.metrics" 2>/dev/null || echo -)
		printf '%-8s %-6s %12s %12s %13s %6s %-7s %9s %9s\n' "$r" "$mode" "$p99" "$p50" "$d99" "$errs" "$n" "$f50" "$f99"
		if [ "$mode" = backup ]; then p99_backup=$p99; else p99_none=$p99; fi
	done
	echo "$r $p99_backup $p99_none" >>"$out/backup-p99.rounds"
done

echo "== backups (bytes, messages, seconds → MB/s, messages/s)"
cat "$out"/round-*-backups.txt | python3 -c '
import re, statistics, sys
rows = []
for line in sys.stdin:
    m = re.search(r"(\d+) messages, (\d+) bytes in ([\d.]+)(ms|s)\b", line)
    if m:
        secs = float(m.group(3)) / (1000 if m.group(4) == "ms" else 1)
        rows.append((int(m.group(1)), int(m.group(2)), secs))
mbs = [b / 1e6 / s for _, b, s in rows]
mps = [n / s for n, _, s in rows]
print("%d backups of %d-%d messages, %.1f-%.1f MB" % (len(rows), min(r[0] for r in rows), max(r[0] for r in rows), min(r[1] for r in rows) / 1e6, max(r[1] for r in rows) / 1e6))
print("MB/s median %.1f (min %.1f, max %.1f); messages/s median %.0f (min %.0f, max %.0f); time median %.2f s" % (
    statistics.median(mbs), min(mbs), max(mbs), statistics.median(mps), min(mps), max(mps), statistics.median(r[2] for r in rows)))
' | tee "$out/backups.txt"

echo "== receipt p99 with backups / without, per pair"
args=
[ -n "${BACKUP_ARGS:-}" ] && args=" $BACKUP_ARGS"
name=backup-p99
[ -z "${BACKUP_ARGS:-}" ] || name=backup-$(echo "$BACKUP_ARGS" | tr -c 'a-z0-9\n' - | tr -s - | sed 's/^-//; s/-$//')-p99
rounds_summary "$out" "$name" "$out/backup-p99.rounds" \
	"parley backup$args back to back on a node of $seed_rooms × $seed_msgs messages, bench direct at $users × $rate/s" \
	"receipt p99 (ms)" "with backups" "without" "≤ 1.50" "backups: $(tail -1 "$out/backups.txt")" \
	"$(rounds_command scripts/bench-backup.sh ROUNDS="$rounds" USERS="$users" RATE="$rate" DURATION="$duration" SEED_ROOMS="$seed_rooms" SEED_MESSAGES="$seed_msgs" BACKUP_ARGS="${BACKUP_ARGS:-}")"
