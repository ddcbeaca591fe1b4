#!/bin/bash
# What `fsynclab watch` costs a database already running (issue 25): pgbench's tps against a
# PostgreSQL cluster on the host's disk, with a `fsynclab watch --comm postgres` attached and
# without, interleaved round by round (in a balanced order: docs/bench/balanced_orders.py),
# and the slow sync calls the watch printed meanwhile.
#
# Usage (root, release build, alone on the machine; PostgreSQL from scripts/setup.sh):
#     flock /tmp/fsynclab-bench.lock docs/bench/pgbench-watch.sh DIR [ROUNDS] [SECONDS]
# DIR is where the cluster lives (the host's disk; made and removed here), ROUNDS defaults to
# 5, SECONDS (one pgbench run) to 30. FSYNCLAB names the binary (default
# target/release/fsynclab); several, space-separated, make a watched side each (two builds
# compared). CLIENTS is pgbench's clients (default 4), THRESHOLD the watch's (default 2ms, so
# that some of the host disk's WAL fdatasyncs print). Prints one line a run, then each side's
# median tps, its ratio to the unwatched side's, and the median of the rounds' ratios; each
# side's last watch output stays in DIR/watch-N.out.
set -euo pipefail

DIR=${1:?usage: pgbench-watch.sh DIR [ROUNDS] [SECONDS]}
ROUNDS=${2:-5}
SECONDS_A_RUN=${3:-30}
read -ra BINARIES <<<"${FSYNCLAB:-target/release/fsynclab}"
CLIENTS=${CLIENTS:-4}
THRESHOLD=${THRESHOLD:-2ms}
PG=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$PG/initdb" ] || { echo "pgbench-watch.sh: PostgreSQL is not installed: run scripts/setup.sh" >&2; exit 2; }
for i in "${!BINARIES[@]}"; do
    [ -x "${BINARIES[$i]}" ] || { echo "pgbench-watch.sh: no ${BINARIES[$i]}: cargo build --release" >&2; exit 2; }
    BINARIES[$i]=$(realpath "${BINARIES[$i]}")
done
[ "$(id -u)" = 0 ] || { echo "pgbench-watch.sh: run as root (watch attaches BPF)" >&2; exit 2; }

mkdir -p "$DIR"
DIR=$(realpath "$DIR")
CLUSTER=$DIR/pg
SOCK=$DIR/sock
WATCH_PID=
cleanup() {
    [ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null && wait "$WATCH_PID" 2>/dev/null
    [ -d "$CLUSTER" ] && runuser -u postgres -- "$PG/pg_ctl" -D "$CLUSTER" -m immediate -w stop >/dev/null 2>&1
    rm -rf "$CLUSTER" "$SOCK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$CLUSTER" "$SOCK"
chown postgres "$CLUSTER" "$SOCK"
runuser -u postgres -- "$PG/initdb" -D "$CLUSTER" -A trust --no-sync >/dev/null
runuser -u postgres -- "$PG/pg_ctl" -D "$CLUSTER" -l "$CLUSTER/server.log" -w \
    -o "-c listen_addresses= -c unix_socket_directories=$SOCK" start >/dev/null
runuser -u postgres -- "$PG/pgbench" -h "$SOCK" -i -s 10 -q postgres >/dev/null 2>&1

# One pgbench run; prints its tps (excluding the connections' time).
bench() {
    runuser -u postgres -- psql -h "$SOCK" -qc checkpoint postgres
    runuser -u postgres -- "$PG/pgbench" -h "$SOCK" -c "$CLIENTS" -j 2 -T "$SECONDS_A_RUN" postgres 2>/dev/null |
        sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}

# A run with watch N attached; prints its tps.
watched() {
    local out=$DIR/watch-$1.out err=$DIR/watch-$1.err
    rm -f "$out" "$err"
    FSYNCLAB_STORE=off "${BINARIES[$1]}" watch --comm postgres --threshold "$THRESHOLD" >"$out" 2>"$err" &
    WATCH_PID=$!
    for _ in $(seq 100); do grep -q '^watching' "$err" 2>/dev/null && break; sleep 0.1; done
    grep -q '^watching' "$err" || { cat "$err" >&2; exit 1; }
    bench
    kill -TERM "$WATCH_PID"
    wait "$WATCH_PID" || true
    WATCH_PID=
}

# Sides: 0 unwatched, N+1 watched by binary N.
SIDES=$((${#BINARIES[@]} + 1))
declare -A tps
for round in $(seq 0 $((ROUNDS - 1))); do
    for side in $("$(dirname "$0")"/balanced_orders.py "$SIDES" "$round"); do
        if [ "$side" = 0 ]; then
            tps[$round,0]=$(bench)
            echo "round $round unwatched: ${tps[$round,0]} tps"
        else
            n=$((side - 1))
            tps[$round,$side]=$(watched "$n")
            printed=$(awk '/ calls over .* printed in /{exit} /fsync|fdatasync/{n++} END{print n+0}' "$DIR/watch-$n.out")
            echo "round $round watched by ${BINARIES[$n]}: ${tps[$round,$side]} tps ($printed slow sync calls printed)"
        fi
    done
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
plain=()
for round in $(seq 0 $((ROUNDS - 1))); do plain+=("${tps[$round,0]}"); done
p=$(median "${plain[@]}")
echo "median tps unwatched: $p"
for side in $(seq 1 $((SIDES - 1))); do
    w=() r=()
    for round in $(seq 0 $((ROUNDS - 1))); do
        w+=("${tps[$round,$side]}")
        r+=("$(awk -v a="${tps[$round,$side]}" -v b="${tps[$round,0]}" 'BEGIN {printf "%.4f", a/b}')")
    done
    m=$(median "${w[@]}")
    echo "median tps watched by ${BINARIES[$((side - 1))]}: $m, ratio $(awk -v w="$m" -v p="$p" 'BEGIN {printf "%.3f", w/p}'), median of the rounds' ratios $(median "${r[@]}") (${r[*]})"
done
