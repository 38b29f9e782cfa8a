#!/usr/bin/env bash
# bench/compare.sh — HTTP load bench of snodo beside the floor (bare hyper) and rmcp, in
# ONE run, repeated, printed as medians and ratios (issue 8).
#
# Usage: bench/compare.sh            # build if needed, 3 repetitions, ~17 min
#        QUICK=1 bench/compare.sh    # 1 repetition of 3 s cells (~3 min): a smoke test
#
# What it does
#   1. builds our `snodo` exactly as users do (`cargo build --release -p snodo-cli`: the
#      workspace's release profile, fat LTO and one codegen unit; the baselines keep
#      their own, thin LTO) into $CARGO_TARGET_DIR [/tmp/target-bench], and the floor-hyper and
#      rmcp baselines from the shared kit (copied to $BASELINES [/tmp/snodo-bench-baselines];
#      their code is never committed here). SKIP_BUILD=1 uses existing binaries.
#   2. per repetition, for each server in turn (order rotated every repetition): start it
#      with ONE tokio worker and pinned to $SERVER_CPU, load it with the shared kit's
#      bench.sh (wrk, 1 thread, pinned to $LOADGEN_CPU), stop it (by PID):
#        tools/call echo and tools/list x 2026-07-28 and 2025-11-25 headers x c=1 and c=32,
#        then tools/call 2026-07-28 at c=256 (memory under many connections).
#   3. cold start (bench/http_cold_start.py, COLD_REPS [9] interleaved runs + one callgrind
#      run each): spawn to the first answered tools/list, CPU, RSS at that answer (anon +
#      file-backed), for the echo fixture and the demo (`snodo serve` over docs/), and
#      for `snodo-lib`: the same echo tool served by the library alone
#      (crates/snodo/examples/echo.rs, the library's default features, no CLI).
#   4. prints the shared kit's summarize.py medians, then bench/compare.py: our figures
#      and their ratios to the floor and to rmcp, checked against the issue-15 targets.
#
# Servers (all: tokio multi-thread runtime with 1 worker thread + the main thread):
#   snodo        snodo fixture --profile echo --protocols 2026-07-28,2025-11-25
#                (TOKIO_WORKER_THREADS=1, plus --workers 1 when the CLI honours it)
#   snodo-2w     the same with two workers, not pinned: requests per server CPU-second
#                against one worker's is what cross-thread work costs
#   snodo-quiet  the same without the request log (RUST_LOG=snodo::request=off), and
#   snodo-observed  with it and Prometheus metrics (--metrics-addr): what observation
#                costs, side by side (SERVERS="snodo-quiet snodo snodo-observed")
#   floor-hyper  mcp-floor hyper (FLOOR_WORKERS=1)
#   rmcp-cached  rmcp 3.11 stateless, json_response, router built once
#                (RMCP_BENCH_WORKERS=1 RMCP_BENCH_CACHED=1)
#
# Knobs: REPS [3]  DURATION [10] s per cell  WARMUP [2] s  OUT_DIR [/tmp/snodo-bench-DATE]
#   LOADGEN_CPU [0] / SERVER_CPU [0]: default co-located on CPU 0, as in
#   ../shared/reference/rust-anchors.md §3 (where the issue's reference numbers come from);
#   LOADGEN_CPU=1 SERVER_CPU=0 gives the server a core of its own (check srvCPU >= 0.95).
#   SERVERS ["snodo snodo-2w floor-hyper rmcp-cached"]   KIT [/work/shared/tools/bench]
#   COLD [1]: 0 skips the cold-start phase.
#   C256 [1]: 0 skips the c=256 cells.
#   LIB_ECHO_BIN: the library's echo example to cold-start [$CARGO_TARGET_DIR/release/examples/echo]
#   SNODO_BIN: measure this snodo binary instead of building one (e.g. a saved build of
#   another commit, for before/after runs).
# Everything is loopback-only and bounded: each wrk run has DURATION + 15 s timeout.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
KIT=${KIT:-/work/shared/tools/bench}
if [ "${QUICK:-0}" = 1 ]; then REPS=${REPS:-1}; DURATION=${DURATION:-3}; WARMUP=${WARMUP:-1}; fi
REPS=${REPS:-3}
export DURATION=${DURATION:-10} WARMUP=${WARMUP:-2}
export LOADGEN_CPU=${LOADGEN_CPU-0} SERVER_CPU=${SERVER_CPU-0}
SERVERS=${SERVERS:-"snodo snodo-2w floor-hyper rmcp-cached"}
COLD=${COLD:-1}
C256=${C256:-1}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-bench}
BASELINES=${BASELINES:-/tmp/snodo-bench-baselines}
OUT_DIR=${OUT_DIR:-/tmp/snodo-bench-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT_DIR"
RAW="$OUT_DIR/runs.jsonl"
SNODO=${SNODO_BIN:-$CARGO_TARGET_DIR/release/snodo}
FLOOR="$BASELINES/floor-server/target/release/mcp-floor"
RMCP="$BASELINES/rmcp-server/target/release/rmcp-bench-server"
LIB_ECHO=${LIB_ECHO_BIN:-$CARGO_TARGET_DIR/release/examples/echo}

die() { echo "compare.sh: $*" >&2; exit 2; }
for t in wrk curl taskset python3 ss; do command -v $t >/dev/null || die "$t not found (apt-get install -y wrk)"; done
[ -x "$KIT/bench.sh" ] || die "shared kit not found at $KIT"

# --- 1. build ---------------------------------------------------------------------------
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if [ -z "${SNODO_BIN:-}" ]; then
    echo "== building snodo (cargo build --release -p snodo-cli) into $CARGO_TARGET_DIR" >&2
    (cd "$REPO" && cargo build --release -q -p snodo-cli)
  fi
  echo "== building the library's echo example (cargo build --release -p snodo --example echo)" >&2
  (cd "$REPO" && cargo build --release -q -p snodo --example echo)
  for b in floor-server rmcp-server; do
    mkdir -p "$BASELINES"
    if [ ! -d "$BASELINES/$b" ]; then
      cp -r "$KIT/$b" "$BASELINES/$b" && rm -rf "$BASELINES/$b/target"
    fi
    echo "== building baseline $b in $BASELINES/$b (first time ~4 min on 2 cores)" >&2
    # The baselines keep their own target dir (their own lock files and profile).
    (cd "$BASELINES/$b" && env -u CARGO_TARGET_DIR cargo build --release -q)
  done
fi
for b in "$SNODO" "$FLOOR" "$RMCP"; do [ -x "$b" ] || die "missing binary $b (run without SKIP_BUILD)"; done

# --- 2. run -----------------------------------------------------------------------------
SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

start_server() { # $1=name -> sets SERVER_PID, PORT
  local name=$1 pin=() cmd=()
  [ -n "$SERVER_CPU" ] && pin=(taskset -c "$SERVER_CPU")
  case "$name" in
    snodo|snodo-2w|snodo-quiet|snodo-observed)
      PORT=8940
      local n=1 logs=() extra=()
      [ "$name" = snodo-2w ] && { n=2; pin=(); }
      [ "$name" = snodo-quiet ] && logs=(RUST_LOG=snodo::request=off)
      [ "$name" = snodo-observed ] && extra=(--metrics-addr 127.0.0.1:8945)
      local workers=()
      "$SNODO" --help 2>/dev/null | grep -q -- '--workers' && workers=(--workers $n)
      cmd=(env TOKIO_WORKER_THREADS=$n "${logs[@]}" "$SNODO" "${workers[@]}" fixture --addr "127.0.0.1:$PORT"
           --protocols 2026-07-28,2025-11-25 --profile echo "${extra[@]}") ;;
    floor-hyper)
      PORT=8933; cmd=(env FLOOR_WORKERS=1 "$FLOOR" hyper "127.0.0.1:$PORT") ;;
    rmcp-cached)
      PORT=8934; cmd=(env RMCP_BENCH_WORKERS=1 RMCP_BENCH_CACHED=1 "$RMCP" "127.0.0.1:$PORT") ;;
    *) die "unknown server $name" ;;
  esac
  ss -Hltn "sport = :$PORT" | grep -q . && die "port $PORT is already in use"
  "${pin[@]}" "${cmd[@]}" >"$OUT_DIR/$name.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    ss -Hltn "sport = :$PORT" | grep -q . && break
    sleep 0.1
  done
  ss -Hltn "sport = :$PORT" | grep -q . || { cat "$OUT_DIR/$name.log" >&2; die "$name did not start"; }
  # The PID that owns the socket (env/taskset exec, so it is SERVER_PID itself).
  local threads; threads=$(ls "/proc/$SERVER_PID/task" | wc -l)
  echo "$(date -u +%T) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) $name pid=$SERVER_PID threads=$threads affinity=$(taskset -cp "$SERVER_PID" | awk '{print $NF}') cmd=${cmd[*]}" \
    | tee -a "$OUT_DIR/servers.txt" >&2
}

# RSS split into anonymous memory (heap, stacks: what grows with load) and file-backed
# pages (the mapped executable and libraries: shared, clean, reclaimable), read right
# after the last cell at that connection count.
mem_sample() { # $1=name $2=conns
  awk -v n="$1" -v c="$2" '/^(VmRSS|RssAnon|RssFile):/{v[$1]=$2}
    END{printf "{\"name\":\"%s\",\"conns\":%s,\"rss_kb\":%d,\"anon_kb\":%d,\"file_kb\":%d}\n", n, c, v["VmRSS:"], v["RssAnon:"], v["RssFile:"]}' \
    "/proc/$SERVER_PID/status" >>"$OUT_DIR/mem.jsonl"
}

# Always name every server target so rows group across repetitions.
run_one() { # $1=name
  local name=$1
  start_server "$name"
  local u="http://127.0.0.1:$PORT/mcp"
  CONNS="1 32" OUT="$RAW" "$KIT/bench.sh" \
    "$u,name=$name,pid=$SERVER_PID" "$u,name=$name,proto=2025-11-25,pid=$SERVER_PID" \
    >>"$OUT_DIR/bench.log" 2>&1 || { tail -20 "$OUT_DIR/bench.log" >&2; die "bench.sh failed for $name"; }
  mem_sample "$name" 32
  if [ "$C256" = 1 ]; then
    CONNS=256 SCENARIOS=call OUT="$RAW" "$KIT/bench.sh" "$u,name=$name,pid=$SERVER_PID" \
      >>"$OUT_DIR/bench.log" 2>&1 || { tail -20 "$OUT_DIR/bench.log" >&2; die "bench.sh c=256 failed for $name"; }
    mem_sample "$name" 256
  fi
  stop_server
}

read -r -a order <<<"$SERVERS"
n=${#order[@]}
cells=$(( 8 + C256 ))
est=$(( REPS * n * cells * (DURATION + WARMUP + 1) / 60 + 1 ))
{
  echo "== $(date -u +%FT%TZ) host: $(nproc) x $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2; exit}'), kernel $(uname -r)"
  echo "== snodo ${SNODO_BIN:+binary $SNODO_BIN, }tree $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD -- crates/snodo/src crates/snodo-cli/src || echo '+dirty'); pinning: server CPU ${SERVER_CPU:-any}, wrk CPU ${LOADGEN_CPU:-any}"
  echo "== $REPS repetition(s) x $n servers x $cells cells of ${DURATION}s (+${WARMUP}s warm-up): ~${est} min; raw: $RAW"
} | tee "$OUT_DIR/header.txt" >&2
for rep in $(seq 1 "$REPS"); do
  for i in $(seq 0 $(( n - 1 ))); do
    s=${order[$(( (i + rep - 1) % n ))]}
    echo "-- repetition $rep/$REPS: $s" >&2
    run_one "$s"
  done
done

# --- 3. cold start ----------------------------------------------------------------------
COLD_OUT="$OUT_DIR/cold.jsonl"
if [ "$COLD" = 1 ]; then
  echo "== cold start, ${COLD_REPS:-9} interleaved runs per server + one callgrind run" >&2
  cold=(--server "snodo=8940=$SNODO fixture --addr 127.0.0.1:8940 --protocols 2026-07-28,2025-11-25 --profile echo --workers 1")
  # The demo (`snodo serve`, every protocol, its tools' schemas compiled at start) over
  # this repository's docs/ folder.
  cold+=(--server "snodo-demo=8941=$SNODO serve --addr 127.0.0.1:8941 --root $REPO/docs --workers 1")
  # The same tool served by the library alone: what the CLI's features add at start.
  [ -x "$LIB_ECHO" ] && cold+=(--server "snodo-lib=8942=$LIB_ECHO 127.0.0.1:8942")
  cold+=(--server "floor-hyper=8933=$FLOOR hyper 127.0.0.1:8933" --server "rmcp-cached=8934=$RMCP 127.0.0.1:8934")
  command -v valgrind >/dev/null && cold+=(--callgrind)
  # Every binary read back into the page cache the same way (file-backed RSS otherwise
  # depends on whether the linker or cp wrote it).
  cold+=(--drop-cache)
  TOKIO_WORKER_THREADS=1 FLOOR_WORKERS=1 RMCP_BENCH_WORKERS=1 RMCP_BENCH_CACHED=1 \
    python3 "$HERE/http_cold_start.py" --reps "${COLD_REPS:-9}" --out "$COLD_OUT" "${cold[@]}" \
    | tee "$OUT_DIR/cold.txt"
fi

# --- 4. report --------------------------------------------------------------------------
echo
echo "## medians per cell (shared kit summarize.py)"
python3 "$KIT/summarize.py" "$RAW"
echo
cat "$OUT_DIR/header.txt"
python3 "$HERE/compare.py" "$RAW" --mem "$OUT_DIR/mem.jsonl" \
  ${COLD_OUT:+$( [ -s "$COLD_OUT" ] && echo --cold "$COLD_OUT")} | tee "$OUT_DIR/table.txt"
# (an `if`: as a last `[ … ] &&` it made the script exit 1 whenever COLD=0)
if [ -s "$OUT_DIR/cold.txt" ]; then cat "$OUT_DIR/cold.txt"; fi
