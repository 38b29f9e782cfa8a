#!/usr/bin/env bash
# The bus at scale (issue 35, Build §4): a benchmark, not a timed test.
#
#   bash bench/bus.sh                 # memory postgres redis; BENCH_BUSES="redis" for one
#
# Each bus is run once per BENCH_HTTP mode ("1 2" by default; fresh servers each time):
# `1`, HTTP/1.1 with one connection per stream; `2`, h2c with prior knowledge and
# BENCH_PER_CONN (100) streams multiplexed on each connection. A table of every run
# (fan-out latency, servers' CPU per stream per event, RSS per idle stream) ends the output.
#
# Per bus: release `snodo fixture` servers on 127.0.0.1 (three sharing the bus; `memory` is
# ONE server without a bus, the in-process baseline), a throwaway PostgreSQL or Redis
# (scale/postgres.sh, scale/redis.sh), and one load process (bench/bus-load, raw sockets or h2,
# release) that opens BENCH_STREAMS (10,000) `subscriptions/listen` streams round robin
# over the servers and prints:
#   - each server's RSS before and after, per open idle stream;
#   - BENCH_ROUNDS (20) publishes on server 1 (a `test_trigger_resource_update` call) and
#     the time from the call to the update's arrival on every stream: p50, p99, max;
#   - BENCH_CALLS (2,000) sequential calls of `test_simple_text` and of `bus_limited` (5 a
#     minute per principal, counted on the bus: past the fifth, each call is counted and
#     refused) on server 1: server CPU µs per call (every thread, /proc schedstat), the
#     bus server's (Redis, or the postmaster and its backends), wall µs per call.
# Bounded: each load run is killed after BENCH_TIMEOUT s (300); every process started here
# listens on 127.0.0.1 and is stopped by PID on exit. File descriptors: the load process
# holds one socket per stream, each server its share; `ulimit -n` is raised to the hard
# limit (10,000 streams need about 10,100 in the load process).
#
# Environment: SNODO (default target/release/snodo: `CARGO_INCREMENTAL=0 cargo build
# --release -p snodo-cli`), BENCH_KEEP_TMP=1 keeps the logs.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
SNODO=${SNODO:-$TARGET/release/snodo}
LOAD=$TARGET/bus-load/release/snodo-bus-load
BUSES=${BENCH_BUSES:-memory postgres redis}
STREAMS=${BENCH_STREAMS:-10000}
ROUNDS=${BENCH_ROUNDS:-20}
CALLS=${BENCH_CALLS:-2000}
TIMEOUT=${BENCH_TIMEOUT:-300}
MODES=${BENCH_HTTP:-1 2}
PER_CONN=${BENCH_PER_CONN:-100}
NAME=bus.sh
# shellcheck source=scale/lib.sh
. "$ROOT/scale/lib.sh"

[[ -x $SNODO ]] || die "$SNODO is missing: CARGO_INCREMENTAL=0 cargo build --release -p snodo-cli"
if [[ ! -x $LOAD || $HERE/bus-load/src/main.rs -nt $LOAD || $HERE/bus-load/Cargo.toml -nt $LOAD ]]; then
    note "building the load process (bench/bus-load: tokio and h2)"
    CARGO_INCREMENTAL=0 cargo build -q --release --manifest-path "$HERE/bus-load/Cargo.toml" \
        --target-dir "$TARGET/bus-load" || die "cannot build bench/bus-load"
fi
ulimit -n "$(ulimit -Hn)"
(( $(ulimit -n) >= STREAMS + 200 )) || die "ulimit -n is $(ulimit -n): $STREAMS streams need $((STREAMS + 200))"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/snodo-bench-bus.XXXXXX")
chmod 755 "$TMP" # PostgreSQL runs as its own user when started as root
cleanup() {
    local rc=$?
    trap - EXIT
    trap '' INT TERM
    stop_started
    (( rc == 0 )) || tail_logs 10 "$TMP"/*/*.err
    [[ ${BENCH_KEEP_TMP:-} == 1 ]] && note "kept $TMP" || rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_server() { # DIR NAME ARGS... -> INSTANCE=host:port, SERVER_PID
    local dir=$1 name=$2 pid
    shift 2
    : >"$dir/$name.out"
    RUST_LOG=warn "$SNODO" --max-listen-streams "$STREAMS" --max-connections $((STREAMS + 100)) \
        fixture --addr 127.0.0.1:0 --protocols 2026-07-28 "$@" \
        >"$dir/$name.out" 2>"$dir/$name.err" &
    pid=$!
    PIDS+=("$pid")
    wait_port "$dir/$name.out" "$pid" "server $name"
    INSTANCE="127.0.0.1:$PORT"
    SERVER_PID=$pid
}

run_bus() { # memory|postgres|redis 1|2
    local bus=$1 mode=$2 dir="$TMP/$1-h$2" url="" n addrs=() pids=() extra=()
    mkdir -p "$dir"
    if [[ $bus == memory ]]; then
        start_server "$dir" s1
        addrs+=("$INSTANCE"); pids+=("$SERVER_PID")
    else
        bash "$ROOT/scale/$bus.sh" start "$dir/server" >/dev/null
        SERVERS+=("$bus:$dir/server")
        url=$(cat "$dir/server/url")
        for n in 1 2 3; do
            start_server "$dir" "s$n" --bus "$url" --bus-instance "s$n" --bus-lane-token lane
            addrs+=("$INSTANCE"); pids+=("$SERVER_PID")
        done
        extra=(--limited bus_limited --bus-pid "$(cat "$dir/server/pid")")
    fi
    [[ $mode == 2 ]] && extra+=(--http 2 --per-conn "$PER_CONN")
    note "$bus, HTTP/$mode: servers ${addrs[*]} (pids ${pids[*]})${url:+, bus $url}"
    sleep 1 # the servers' RSS settles after start-up
    timeout --foreground -k 5 "$TIMEOUT" "$LOAD" --label "$bus" --streams "$STREAMS" \
        --rounds "$ROUNDS" --calls "$CALLS" \
        --addrs "$(IFS=,; echo "${addrs[*]}")" --pids "$(IFS=,; echo "${pids[*]}")" "${extra[@]}" \
        | tee -a "$TMP/out" || die "$bus: the load process failed (exit $?)"
    for n in "${pids[@]}"; do alive "$n" || die "$bus: a server died during the run"; done
    stop_all
    [[ $bus == memory ]] || bash "$ROOT/scale/$bus.sh" stop "$dir/server" >/dev/null 2>&1
}

printf 'snodo bus benchmark: %s, %s streams, %s rounds, %s calls, %s cores\n' \
    "$("$SNODO" --version)" "$STREAMS" "$ROUNDS" "$CALLS" "$(nproc)"
for bus in $BUSES; do
    for mode in $MODES; do run_bus "$bus" "$mode"; done
done
printf '\n| bus | HTTP | publish → every stream: p50 / p99 / max | servers CPU per stream per event | RSS per idle stream |\n|---|---|---|---|---|\n'
grep '^summary|' "$TMP/out" | sed 's/^summary//; s/$/|/'

