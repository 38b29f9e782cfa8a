#!/usr/bin/env bash
# bench/bus-profile.sh — callgrind instruction counts of the listen fan-out (issue 35 §4).
#
#   bash bench/bus-profile.sh [1|2]       # HTTP/1.1 (default) or h2c, 100 streams a connection
#
# One release `snodo fixture` (no bus, one tokio worker: deterministic counts) under
# callgrind; bench/bus-load opens PROF_STREAMS (1,000) `subscriptions/listen` streams,
# then publishes PROF_ROUNDS (5) resource updates. Collection is zeroed once every stream
# is open and dumped after the last round, so the figures are the publish phase only:
# Ir and malloc calls per stream per event (the trigger call itself, one per round, is
# included: a few hundred Ir per stream at 1,000 streams). Wall clock is not measured.
# Also prints the server's syscalls in the publish phase of a native run (strace -c,
# attached during the load's pause before the first publish), per stream per event.
# Output kept in $OUT_DIR (/tmp/snodo-bus-profile-DATE).
#
# Environment: SNODO (default target/release/snodo), PROF_STREAMS, PROF_ROUNDS.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
SNODO=${SNODO:-$TARGET/release/snodo}
LOAD=$TARGET/bus-load/release/snodo-bus-load
MODE=${1:-1}
STREAMS=${PROF_STREAMS:-1000}
ROUNDS=${PROF_ROUNDS:-5}
OUT_DIR=${OUT_DIR:-/tmp/snodo-bus-profile-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT_DIR"
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }
[[ -x $SNODO ]] || { echo "$SNODO is missing" >&2; exit 2; }
if [[ ! -x $LOAD ]]; then
    CARGO_INCREMENTAL=0 cargo build -q --release --manifest-path "$HERE/bus-load/Cargo.toml" \
        --target-dir "$TARGET/bus-load"
fi
ulimit -n "$(ulimit -Hn)"
extra=()
[[ $MODE == 2 ]] && extra=(--http 2 --per-conn 100)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

port_of() { # log file -> port, once the server printed its address
    local i p
    for i in $(seq 1 600); do
        p=$(sed -n 's#.*http://127\.0\.0\.1:\([0-9][0-9]*\)/mcp.*#\1#p' "$1" | head -1)
        [[ -n $p ]] && { echo "$p"; return; }
        sleep 0.1
    done
    echo "the server did not start: $(tail -3 "$1")" >&2
    exit 1
}

wait_line() { # file pattern pid: waits for a line of the load process
    until grep -qs "$2" "$1"; do
        kill -0 "$3" 2>/dev/null || { cat "$1" >&2; echo "the load process ended early" >&2; exit 1; }
        sleep 0.2
    done
}

# run KIND: KIND=callgrind or strace
run() {
    local kind=$1 log="$OUT_DIR/$1-h$MODE" spid lpid port
    if [[ $kind == callgrind ]]; then
        RUST_LOG=warn TOKIO_WORKER_THREADS=1 valgrind --tool=callgrind --compress-strings=no \
            --callgrind-out-file="$log.%p.out" "$SNODO" --workers 1 \
            --max-listen-streams "$STREAMS" --max-connections $((STREAMS + 100)) \
            fixture --addr 127.0.0.1:0 --protocols 2026-07-28 >"$log.server" 2>&1 &
    else
        RUST_LOG=warn "$SNODO" --workers 1 \
            --max-listen-streams "$STREAMS" --max-connections $((STREAMS + 100)) \
            fixture --addr 127.0.0.1:0 --protocols 2026-07-28 >"$log.server" 2>&1 &
    fi
    spid=$!
    PIDS+=("$spid")
    port=$(port_of "$log.server")
    "$LOAD" --label prof --streams "$STREAMS" --rounds "$ROUNDS" --calls 0 \
        --addrs "127.0.0.1:$port" --pids "$spid" --pause-ms 3000 "${extra[@]}" >"$log.load" 2>&1 &
    lpid=$!
    PIDS+=("$lpid")
    wait_line "$log.load" "pausing" "$lpid"
    local tpid=""
    if [[ $kind == callgrind ]]; then
        callgrind_control -z "$spid" >/dev/null
    else
        strace -c -f -p "$spid" -o "$log.strace" 2>/dev/null &
        tpid=$!
    fi
    wait_line "$log.load" "publish on instance 1" "$lpid"
    if [[ $kind == callgrind ]]; then
        callgrind_control --dump=measured "$spid" >/dev/null
    else
        kill -INT "$tpid"; wait "$tpid" 2>/dev/null || true
    fi
    wait "$lpid" || true
    kill -TERM "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
}

per=$((STREAMS * ROUNDS))
run callgrind
f=$(grep -l '^desc: Trigger: dump measured' "$OUT_DIR"/callgrind-h"$MODE".*.out* | head -1)
ir=$(awk '/^(summary|totals):/{print $2; exit}' "$f")
read -r m fr < <(python3 "$HERE/cg_calls.py" "$f" '^malloc$' '^free$' --per "$per" | awk '{printf "%s ", $2} END{print ""}')
run strace
sys=$(awk '$NF=="total"{print $4}' "$OUT_DIR/strace-h$MODE.strace")
printf '| HTTP/%s | %s streams x %s events | Ir per stream per event | malloc | free | syscalls |\n' "$MODE" "$STREAMS" "$ROUNDS"
printf '| | | %s | %s | %s | %s |\n' "$((ir / per))" "$m" "$fr" "$(python3 -c "print(round(${sys:-0}/$per,2))")"
echo "callgrind: $f"
echo "strace: $OUT_DIR/strace-h$MODE.strace"
