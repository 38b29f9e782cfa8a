#!/usr/bin/env bash
# bench/h2.sh — snodo over HTTP/2 beside its own HTTP/1.1 and a bare hyper HTTP/2 floor,
# in ONE run (issue 36): requests per server CPU-second for tools/call echo and
# tools/list (2026-07-28), and the ratios the issue targets.
#
# Usage: bench/h2.sh        Knobs: DURATION [8] s, STREAMS [100], CONNS [32],
#                           CELLS ["snodo-h2 snodo-h1 floor-h2 floor-h1"],
#                           SNODO_BIN [target/release/snodo], BASELINES [/tmp/snodo-bench-baselines],
#                           KIT [/work/shared/tools/bench or ../shared/tools/bench]
#
# Cells (each server with ONE tokio worker, pinned to CPU 0; the load on CPU 1):
#   snodo-h2     h2load -c 1 -m $STREAMS   (h2c prior knowledge: $STREAMS streams, one connection)
#   snodo-h1     h2load --h1 -c $CONNS     (HTTP/1.1, $CONNS connections, one request each at a time)
#   floor-h2     the shared kit's floor server (bare hyper: parse, dispatch, serialise) with
#                hyper's HTTP/2 connection builder in place of HTTP/1.1's, patched in a copy
#                under $BASELINES (never committed here), same h2load as snodo-h2
#   floor-h1     the floor as shipped, same load as snodo-h1
# The load generator is nghttp2's h2load for every cell (Debian nghttp2-client), so the
# client's cost is the same on both sides of each ratio. Server CPU is read from
# /proc/PID/stat (utime+stime) around each cell. Servers are stopped by PID.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
DURATION=${DURATION:-8}
STREAMS=${STREAMS:-100}
CONNS=${CONNS:-32}
SNODO=${SNODO_BIN:-$REPO/target/release/snodo}
BASELINES=${BASELINES:-/tmp/snodo-bench-baselines}
KIT=${KIT:-$( [ -d /work/shared/tools/bench ] && echo /work/shared/tools/bench || echo "$REPO/../shared/tools/bench")}
HZ=$(getconf CLK_TCK)
CELLS=${CELLS:-snodo-h2 snodo-h1 floor-h2 floor-h1}

die() { echo "h2.sh: $*" >&2; exit 2; }
for t in h2load taskset curl; do command -v $t >/dev/null || die "$t not found (apt-get install -y nghttp2-client util-linux curl)"; done
[ -x "$SNODO" ] || die "no snodo at $SNODO (cargo build --release -p snodo-cli)"

# --- the floors: the kit's floor server, and a copy patched to HTTP/2 -------------------
FLOOR_H1="$BASELINES/floor-server/target/release/mcp-floor"
FLOOR_H2="$BASELINES/floor-h2/target/release/mcp-floor"
if [[ " $CELLS " == *" floor-h1 "* && ! -x $FLOOR_H1 ]]; then
  [ -d "$KIT/floor-server" ] || die "shared kit not found at $KIT"
  mkdir -p "$BASELINES"; rm -rf "$BASELINES/floor-server"
  cp -r "$KIT/floor-server" "$BASELINES/floor-server" && rm -rf "$BASELINES/floor-server/target"
  (cd "$BASELINES/floor-server" && env -u CARGO_TARGET_DIR cargo build --release -q --bin mcp-floor)
fi
if [[ " $CELLS " == *" floor-h2 "* && ! -x $FLOOR_H2 ]]; then
  rm -rf "$BASELINES/floor-h2"
  cp -r "$KIT/floor-server" "$BASELINES/floor-h2" && rm -rf "$BASELINES/floor-h2/target"
  sed -i 's/^hyper = { version = "1", features = \["server", "http1"\] }/hyper = { version = "1", features = ["server", "http1", "http2"] }/' "$BASELINES/floor-h2/Cargo.toml"
  sed -i 's/hyper::server::conn::http1::Builder::new()/hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())/' "$BASELINES/floor-h2/src/main.rs"
  grep -q 'http2::Builder' "$BASELINES/floor-h2/src/main.rs" || die "could not patch the floor to HTTP/2"
  (cd "$BASELINES/floor-h2" && env -u CARGO_TARGET_DIR cargo build --release -q --bin mcp-floor)
fi

TMP=$(mktemp -d /tmp/snodo-h2bench.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }; rm -rf "$TMP"; }
trap cleanup EXIT

META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"h2load","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},%s}}' "$META" >"$TMP/tools_call.json"
printf '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{%s}}' "$META" >"$TMP/tools_list.json"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start() { # name port
  case $1 in
    snodo-*) taskset -c 0 env TOKIO_WORKER_THREADS=1 "$SNODO" --workers 1 fixture --addr "127.0.0.1:$2" \
               --protocols 2026-07-28,2025-11-25 --profile echo >/dev/null 2>&1 & ;;
    floor-h2) taskset -c 0 env FLOOR_WORKERS=1 "$FLOOR_H2" hyper "127.0.0.1:$2" >/dev/null 2>&1 & ;;
    floor-h1) taskset -c 0 env FLOOR_WORKERS=1 "$FLOOR_H1" hyper "127.0.0.1:$2" >/dev/null 2>&1 & ;;
  esac
  PID=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
    sleep 0.05
  done
  die "$1 did not start"
}

run_cell() { # name port method -> prints a table row
  local name=$1 port=$2 method=$3 load=()
  case $name in
    *-h2) load=(-c 1 -m "$STREAMS") ;;
    *-h1) load=(--h1 -c "$CONNS" -m 1) ;;
  esac
  local hdrs=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
              -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $method")
  [ "$method" = tools/call ] && hdrs+=(-H 'Mcp-Name: echo')
  # Warm-up, then the measured run.
  taskset -c 1 h2load "${load[@]}" -D 1 "${hdrs[@]}" -d "$TMP/${method/\//_}.json" "http://127.0.0.1:$port/mcp" >/dev/null 2>&1 || true
  local t0; t0=$(cpu_ticks "$PID")
  taskset -c 1 h2load "${load[@]}" -D "$DURATION" "${hdrs[@]}" -d "$TMP/${method/\//_}.json" "http://127.0.0.1:$port/mcp" >"$TMP/out" 2>&1 || true
  local t1; t1=$(cpu_ticks "$PID")
  local ok; ok=$(awk '/^requests:/{for(i=1;i<=NF;i++) if($(i+1)=="succeeded,"){print $i}}' "$TMP/out")
  local s2xx; s2xx=$(awk '/^status codes:/{print $3}' "$TMP/out")
  local cpu; cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$HZ" 'BEGIN{printf "%.2f", (b-a)/hz}')
  local rps; rps=$(awk -v n="${s2xx:-0}" -v d="$DURATION" 'BEGIN{printf "%.0f", n/d}')
  local per; per=$(awk -v n="${s2xx:-0}" -v c="$cpu" 'BEGIN{ if (c>0) printf "%.0f", n/c; else print "n/a"}')
  echo "$name $method ${s2xx:-0} ${ok:-0} $cpu $rps $per" >>"$TMP/rows"
  printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$method" "$rps" "$cpu" "$per" "${s2xx:-0}"
}

printf '| server | method | req/s | server CPU s | req per server CPU-s | 2xx |\n|---|---|---:|---:|---:|---:|\n'
port=8990
for name in $CELLS; do
  port=$((port + 1))
  start "$name" "$port"
  for method in tools/call tools/list; do run_cell "$name" "$port" "$method"; done
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done

echo
echo "CPU per request, ratios (lower is better for snodo; targets: h2/floor-h2 <= 1.3, h2/h1 <= 1.0):"
awk '{per[$1" "$2]=$7} END{
  split("tools/call tools/list", m, " ");
  for (i in m) {
    k=m[i];
    h2=per["snodo-h2 " k]; h1=per["snodo-h1 " k]; f2=per["floor-h2 " k]; f1=per["floor-h1 " k];
    if (h2>0 && f2>0 && h1>0) printf "  %s: snodo-h2 / floor-h2 = %.2f   snodo-h2 / snodo-h1 = %.2f   (floor-h2 / floor-h1 = %.2f)\n", k, f2/h2, h1/h2, (f1>0? f1/f2 : 0);
  }
}' "$TMP/rows"
