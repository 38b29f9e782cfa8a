#!/usr/bin/env bash
# bench/cpu_split.sh — where a server's CPU per request goes: user vs kernel time, and
# context switches, under one wrk load (tools/call echo, 2026-07-28, c=32, co-located
# on CPU 0 like bench/compare.sh). Complements the callgrind counts of bench/profile.sh,
# which only see user space.
#
# Usage: bench/cpu_split.sh [SERVER ...]   (default: snodo floor-hyper rmcp-cached)
# Knobs: DURATION [8] s, CONNS [32], PROTO [2026-07-28], SNODO_BIN, BASELINES, CARGO_TARGET_DIR.
# Needs the binaries bench/compare.sh builds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DURATION=${DURATION:-8}
CONNS=${CONNS:-32}
PROTO=${PROTO:-2026-07-28}
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-bench}
BASELINES=${BASELINES:-/tmp/snodo-bench-baselines}
SNODO=${SNODO_BIN:-$CARGO_TARGET_DIR/release/snodo}
TMP=$(mktemp -d /tmp/snodo-cpusplit.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; } ; rm -rf "$TMP"; }
trap cleanup EXIT
HZ=$(getconf CLK_TCK)

lua() { # the same request as the shared kit's bench.sh (tools/call echo)
  local meta=""
  if [[ "$PROTO" > "2026-07-27" ]]; then
    meta=',"_meta":{"io.modelcontextprotocol/protocolVersion":"'$PROTO'","io.modelcontextprotocol/clientInfo":{"name":"mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}'
  fi
  cat <<EOF
wrk.method = "POST"
wrk.body = [==[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}$meta}}]==]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "$PROTO"
EOF
  if [ -n "$meta" ]; then
    echo 'wrk.headers["Mcp-Method"] = "tools/call"'
    echo 'wrk.headers["Mcp-Name"] = "echo"'
  fi
  echo 'done = function(s) io.write(string.format("REQUESTS %d\n", s.requests)) end'
}

snap() { # pid -> "utime stime voluntary_ctxt nonvoluntary_ctxt" summed over threads
  local u s v n
  read -r u s < <(awk '{print $14, $15}' "/proc/$1/stat")
  v=0; n=0
  for t in /proc/"$1"/task/*/status; do
    v=$(( v + $(awk '/^voluntary_ctxt_switches/{print $2}' "$t") ))
    n=$(( n + $(awk '/^nonvoluntary_ctxt_switches/{print $2}' "$t") ))
  done
  echo "$u $s $v $n"
}

lua >"$TMP/req.lua"
printf '| server | proto | req/s | user us/req | kernel us/req | total us/req | ctx switches/req (vol+invol) |\n|---|---|---:|---:|---:|---:|---:|\n'
for name in ${*:-snodo floor-hyper rmcp-cached}; do
  case $name in
    snodo) port=8970; cmd=(env TOKIO_WORKER_THREADS=1 "$SNODO" fixture --addr 127.0.0.1:$port --protocols 2026-07-28,2025-11-25 --profile echo) ;;
    floor-hyper) port=8971; cmd=(env FLOOR_WORKERS=1 "$BASELINES/floor-server/target/release/mcp-floor" hyper 127.0.0.1:$port) ;;
    rmcp-cached) port=8972; cmd=(env RMCP_BENCH_WORKERS=1 RMCP_BENCH_CACHED=1 "$BASELINES/rmcp-server/target/release/rmcp-bench-server" 127.0.0.1:$port) ;;
    *) echo "unknown server $name" >&2; exit 2 ;;
  esac
  taskset -c 0 "${cmd[@]}" >"$TMP/$name.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
  taskset -c 0 wrk -t1 -c"$CONNS" -d2s -s "$TMP/req.lua" "http://127.0.0.1:$port/mcp" >/dev/null 2>&1 || true
  read -r u0 s0 v0 n0 < <(snap "$PID")
  out=$(taskset -c 0 timeout $(( DURATION + 15 )) wrk -t1 -c"$CONNS" -d"${DURATION}s" -s "$TMP/req.lua" "http://127.0.0.1:$port/mcp" 2>&1)
  read -r u1 s1 v1 n1 < <(snap "$PID")
  reqs=$(awk '/^REQUESTS/{print $2}' <<<"$out")
  non2xx=$( (grep -o 'Non-2xx or 3xx responses: [0-9]*' <<<"$out" || true) | awk '{print $NF}')
  [ -n "$non2xx" ] && echo "warning: $name non-2xx responses: $non2xx" >&2
  awk -v n="$name" -v p="$PROTO" -v r="$reqs" -v d="$DURATION" -v hz="$HZ" \
      -v u=$(( u1 - u0 )) -v s=$(( s1 - s0 )) -v c=$(( v1 - v0 + n1 - n0 )) \
      'BEGIN{printf "| %s | %s | %.0f | %.1f | %.1f | %.1f | %.2f |\n", n, p, r/d, 1e6*u/hz/r, 1e6*s/hz/r, 1e6*(u+s)/hz/r, c/r}'
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done
