# shellcheck shell=bash disable=SC2034 # its variables are for the scripts that source it
# rounds.sh is sourced by the comparison scripts (scripts/bench-*.sh): the
# one place for how they measure here (issue 33, "Measure pinned"):
#
#   pinning  PIN=1 (the default): the server under test, whichever side it
#            is, runs on core SERVER_CPU (0) and the load generator on core
#            LOAD_CPU (1), with taskset; both sides get the same single core
#            and the load never competes with them. PIN=0 pins nothing.
#   rounds   ROUNDS rounds (5; 1 with QUICK=1), a fresh server for every
#            run, the two sides alternating which goes first (rounds_order).
#   settle   every server starts on a quiet disk (rounds_settle_disk): the
#            writes and deletions of the run before it, left to the
#            kernel, must not land in its first seconds (SETTLE=0: no wait).
#   quick    QUICK=1 makes each script a short try (one round, a short
#            duration, a small load) that proves it works end to end; its
#            summaries are marked quick and stay out of the headline table.
#   summary  each comparison's rounds go through cmd/benchtable, which
#            prints every round's figures and the median ratio with its
#            spread (min-max), and saves the same as one JSON line,
#            OUT/NAME.summary.json, that scripts/bench-all.sh turns into
#            BENCHMARKS.md's headline table.
#
# The servers are started and stopped by the scripts themselves, as before;
# the arithmetic and the table are Go (cmd/benchtable), where they are
# tested, instead of awk repeated in each script.
#
# After sourcing: rounds, quick, pin, server_cpu and load_cpu (arrays to put
# before a command: empty when PIN=0), pinned (the pinning in words).
# Then rounds_init TMPDIR PARLEY-BINARY builds the summary tool and reads
# the build's commit.

# rounds_root: the checkout holding this file, where cmd/benchtable is.
rounds_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
quick=${QUICK:-0}
if [[ "$quick" = 1 ]]; then
	rounds=${ROUNDS:-1}
else
	rounds=${ROUNDS:-5}
fi
pin=${PIN:-1}
server_cpu=() load_cpu=()
pinned="not pinned (PIN=0)"
if [[ "$pin" = 1 ]]; then
	if (($(nproc --all) < 2)); then
		echo "PIN=1 needs two cores (server on one, load on the other) and this machine has $(nproc --all): run with PIN=0" >&2
		exit 1
	fi
	server_cpu=(taskset -c "${SERVER_CPU:-0}") load_cpu=(taskset -c "${LOAD_CPU:-1}")
	pinned="server on core ${SERVER_CPU:-0}, load generator on core ${LOAD_CPU:-1}"
fi
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
	echo "ROUNDS=$rounds: give a whole number of rounds, 1 or more" >&2
	exit 1
fi

# rounds_init TMPDIR BIN: builds cmd/benchtable into TMPDIR (as
# $benchtable) and sets commit, the build measured: BENCH_COMMIT if given,
# else the commit BIN's `parley version` names, else (a binary built here
# with -buildvcs=false) this checkout's `git describe`.
rounds_init() {
	benchtable=$1/benchtable
	(cd "$rounds_root" && go build -o "$benchtable" ./cmd/benchtable)
	local v
	v=$("$2" version 2>/dev/null || true)
	if [[ -n "${BENCH_COMMIT:-}" ]]; then
		commit=$BENCH_COMMIT
	elif [[ "$v" =~ commit\ ([0-9a-f]+)(,\ modified)? ]]; then
		commit=${BASH_REMATCH[1]:0:7}${BASH_REMATCH[2]:+-dirty}
	elif [[ -z "${PARLEY_BIN:-}" ]]; then
		commit=$(git describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
	else
		commit="unknown: PARLEY_BIN=$PARLEY_BIN (set BENCH_COMMIT)"
	fi
}

# rounds_settle_disk DIR waits until the disk holding DIR has done no I/O
# for a second (writes, discards and flushes in /proc/diskstats unchanged,
# none in flight), at most 20 s; it returns at once with SETTLE=0 or where
# the disk is not found. A server's shutdown deletes its WAL (up to 128 MB
# after a heavy run), the kernel writes a run's pages back seconds after
# it, and on a disk with online discard, as this machine's, freeing blocks
# stalls every fdatasync on it for tens of ms (docs/perf-log.md, "Backups:
# the deletions' cost"): without the wait, one run's leftovers landed in
# the next run's first seconds, whichever side that was.
rounds_settle_disk() {
	[[ "${SETTLE:-1}" = 1 ]] || return 0
	local dev last='' now
	dev=$(basename "$(findmnt -no SOURCE -T "$1" 2>/dev/null)" 2>/dev/null) || return 0
	[[ -n "$dev" ]] && grep -q " $dev " /proc/diskstats || return 0
	sync -f "$1" # ext4 discards at its journal's commit: make it now
	for _ in $(seq 20); do
		now=$(awk -v d="$dev" '$3 == d { print $8, $12, $15, $19 }' /proc/diskstats)
		[[ "$now" = "$last" ]] && [[ "$(echo "$now" | cut -d' ' -f2)" = 0 ]] && return 0
		last=$now
		sleep 1
	done
}

# rounds_order R A B prints "A B" for odd rounds and "B A" for even ones,
# so that what going first or second does cancels out over the rounds.
rounds_order() {
	if (($1 % 2)); then echo "$2 $3"; else echo "$3 $2"; fi
}

# rounds_command SCRIPT VAR=VALUE... prints the command that reruns one
# comparison: the settings given, quoted for the shell, PIN=0 and QUICK=1
# when they apply, then the script.
rounds_command() {
	local script=$1 kv cmd=
	shift
	[[ "$pin" = 1 ]] || cmd+="PIN=0 "
	[[ "$quick" = 1 ]] && cmd+="QUICK=1 "
	for kv in "$@"; do
		cmd+="${kv%%=*}=$(printf '%q' "${kv#*=}") "
	done
	echo "${cmd}${script}"
}

# rounds_summary OUT NAME ROUNDS-FILE TITLE METRIC A B GOAL NOTE COMMAND:
# the median ratio A/B of ROUNDS-FILE's rounds ("ROUND A B" lines) with
# its spread and every round, for people and as OUT/NAME.summary.json.
rounds_summary() {
	local q=()
	[[ "$quick" = 1 ]] && q=(-quick)
	"$benchtable" summary -out "$1" -name "$2" -title "$4" -metric "$5" -a "$6" -b "$7" \
		-goal "$8" -note "$9" -command "${10}" -pinned "$pinned" -commit "$commit" "${q[@]}" "$3"
}

# rounds_json FILE EXPR prints a figure of a `parley bench --json` report,
# a jq expression (jq is needed), or "-" when it is missing, which
# benchtable refuses with the round's number.
rounds_json() {
	jq -r "($2) // \"-\"" "$1" 2>/dev/null || echo -
}
