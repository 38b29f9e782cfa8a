#!/usr/bin/env bash
# bench/profile.sh — callgrind instruction counts of the echo hot path (issue 8).
# Instruction counts are deterministic, so they are stable on a noisy 2-core VM where
# wall-clock figures swing by 10-30 %.
#
# Usage:
#   bench/profile.sh micro   [N]   # McpService::handle in-process (criterion bench binary,
#                                  # SNODO_BENCH_ITERS mode), per e2e case: Ir and malloc
#                                  # calls per request; callgrind_annotate (inclusive +
#                                  # exclusive) of one case
#   bench/profile.sh server  [N]   # each server (snodo, floor-hyper, rmcp-cached) under
#                                  # callgrind, one tokio worker, N requests over one
#                                  # keep-alive connection after a 200-request warm-up:
#                                  # Ir/request server-side, for each case
# N defaults to 2000 (micro) / 1000 (server). Output: $OUT_DIR [/tmp/snodo-profile-DATE].
# CASE=call_echo_2026-07-28 picks the micro case annotated (any e2e case name);
# SERVERS="snodo" limits server mode to some of snodo, floor-hyper, rmcp-cached.
# SNODO_ENV / SNODO_ARGS: extra environment (e.g. RUST_LOG=snodo::request=off) and flags
# (e.g. --metrics-addr 127.0.0.1:9464) for the snodo server, to price logs and metrics.
# Needs the release binaries bench/compare.sh builds (server mode) and valgrind.
# BENCH_BIN / SNODO_BIN: profile these binaries instead of building / the default path.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
MODE=${1:-micro}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-bench}
BASELINES=${BASELINES:-/tmp/snodo-bench-baselines}
OUT_DIR=${OUT_DIR:-/tmp/snodo-profile-$(date +%Y%m%d-%H%M%S)}
CASE=${CASE:-call_echo_2026-07-28}
mkdir -p "$OUT_DIR"
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }

total_ir() { # callgrind out file -> total Ir (the "summary:"/"totals:" line)
  awk '/^(summary|totals):/{print $2; exit}' "$1"
}

short() { # shorten registry / toolchain paths in callgrind_annotate lines
  sed -E 's#/root/\.cargo/registry/src/index\.crates\.io-[0-9a-f]+/##g; s#/rustc/[0-9a-f]+/##g; s# \[[^]]*\]$##'
}

annotate() { # $1=out file $2=label
  local f=$1 label=$2
  echo "### $label — exclusive (self) Ir, top 40"
  { callgrind_annotate --threshold=99 "$f" 2>/dev/null | sed -n '/^Ir/,$p' | short | head -45; } || true
  echo
  echo "### $label — inclusive Ir, top 60"
  { callgrind_annotate --inclusive=yes --threshold=99 "$f" 2>/dev/null | sed -n '/^Ir/,$p' | short | head -65; } || true
}

case "$MODE" in
micro)
  N=${2:-2000}
  BIN=${BENCH_BIN:-}
  [ -n "$BIN" ] || { echo "== building the hot_path bench binary (profile bench = release + debug=1)" >&2
  # Same profile as the server build in compare.sh (fat LTO, 1 CGU): reuses its artifacts.
  BIN=$(cd "$REPO" && CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 cargo bench -p snodo --bench hot_path --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("target",{}).get("name")=="hot_path" and m.get("executable"):
        print(m["executable"])' | tail -1); }
  [ -x "$BIN" ] || { echo "bench binary not found" >&2; exit 2; }
  echo "bench binary: $BIN" >&2
  # Collection is toggled on inside hot_path::round_trip only: the figures are
  # McpService::handle + collecting the response body, without building the request.
  printf '| case | Ir per request | malloc calls per request | realloc | memcpy calls |\n|---|---:|---:|---:|---:|\n'
  for c in call_echo_2026-07-28 call_echo_2025-11-25 list_2026-07-28 list_2025-11-25; do
    f="$OUT_DIR/micro-$c.out"
    SNODO_BENCH_ITERS=$N SNODO_BENCH_CASE=$c valgrind --tool=callgrind \
      --collect-atstart=no --toggle-collect='hot_path::round_trip*' \
      --callgrind-out-file="$f" "$BIN" >/dev/null 2>"$OUT_DIR/micro-$c.log"
    read -r m r cp < <(python3 "$HERE/cg_calls.py" "$f" '^malloc$' '^realloc$' 'memcpy' --per "$N" | awk '{printf "%s ", $2} END{print ""}')
    printf '| %s | %s | %s | %s | %s |\n' "$c" "$(( $(total_ir "$f") / N ))" "$m" "$r" "$cp"
  done
  echo
  annotate "$OUT_DIR/micro-$CASE.out" "micro $CASE, $N requests"
  ;;
server)
  N=${2:-1000}
  SNODO=${SNODO_BIN:-$CARGO_TARGET_DIR/release/snodo}
  FLOOR="$BASELINES/floor-server/target/release/mcp-floor"
  RMCP="$BASELINES/rmcp-server/target/release/rmcp-bench-server"
  for s in ${SERVERS:-snodo floor-hyper rmcp-cached}; do
    case $s in snodo) b=$SNODO ;; floor-hyper) b=$FLOOR ;; *) b=$RMCP ;; esac
    [ -x "$b" ] || { echo "missing $b: run bench/compare.sh once" >&2; exit 2; }
  done
  printf '| server | proto | op | Ir per request (server process, N=%s) | malloc calls per request |\n|---|---|---|---:|---:|\n' "$N"
  for s in ${SERVERS:-snodo floor-hyper rmcp-cached}; do
    case $s in
      # (variables set around valgrind, not with env(1) under it: valgrind would
      # instrument env and the server it execs would run natively)
      snodo) port=8950; vars=(TOKIO_WORKER_THREADS=1 ${SNODO_ENV:-}); cmd=("$SNODO" fixture --addr 127.0.0.1:$port --protocols 2026-07-28,2025-11-25 --profile echo ${SNODO_ARGS:-}) ;;
      floor-hyper) port=8951; vars=(FLOOR_WORKERS=1); cmd=("$FLOOR" hyper 127.0.0.1:$port) ;;
      rmcp-cached) port=8952; vars=(RMCP_BENCH_WORKERS=1 RMCP_BENCH_CACHED=1); cmd=("$RMCP" 127.0.0.1:$port) ;;
    esac
    for proto in 2026-07-28 2025-11-25; do
      for op in call list; do
        out="$OUT_DIR/server-$s-$proto-$op"
        env "${vars[@]}" valgrind --tool=callgrind --callgrind-out-file="$out.%p.out" "${cmd[@]}" >"$out.log" 2>&1 &
        vpid=$!
        for _ in $(seq 1 300); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
        python3 "$HERE/fixed_client.py" "http://127.0.0.1:$port/mcp" "$op" "$proto" 200
        callgrind_control -z "$vpid" >/dev/null
        python3 "$HERE/fixed_client.py" "http://127.0.0.1:$port/mcp" "$op" "$proto" "$N"
        callgrind_control --dump="measured" "$vpid" >/dev/null
        kill -TERM "$vpid" 2>/dev/null || true
        wait "$vpid" 2>/dev/null || true
        # the dump requested above is the file with the "measured" description
        f=$(grep -l '^desc: Trigger: dump measured' "$out".*.out* 2>/dev/null | head -1)
        ir=$(total_ir "$f")
        m=$(python3 "$HERE/cg_calls.py" "$f" '^malloc$' --per "$N" | awk '{print $2}')
        printf '| %s | %s | %s | %s | %s |\n' "$s" "$proto" "$op" "$(( ir / N ))" "$m"
        echo "$f" >>"$OUT_DIR/server-files.txt"
      done
    done
  done
  echo
  f=$(grep snodo-2026-07-28-call "$OUT_DIR/server-files.txt" | head -1 || true)
  [ -n "$f" ] && annotate "$f" "server snodo 2026-07-28 tools/call, $N requests (inclusive is the useful part)"
  ;;
*) echo "usage: $0 micro|server [N]" >&2; exit 2 ;;
esac
