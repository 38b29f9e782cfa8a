#!/usr/bin/env bash
# Load + fault test of `snodo fixture` (bounded; loopback only).
#
#   loadtest/run.sh [DURATION_SECONDS] [CLIENTS]      (defaults: 30, 64; duration capped at 600)
#
# Starts the fixture on a free loopback port (release binary if built, else debug; builds
# debug when neither exists), runs loadtest/client.py against it for DURATION seconds with
# CLIENTS concurrent clients, then stops the server with SIGTERM and checks it exits.
# Prints the client's summary table and `N passed, M failed`; exits non-zero on a failed
# check. Environment: SNODO_BIN (binary to test), CARGO_TARGET_DIR, IDLE (seconds of idle
# before the "after" RSS reading, default 5), SEED.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
duration="${1:-30}"
clients="${2:-64}"
idle="${IDLE:-5}"
if (( duration > 600 )); then duration=600; fi
target="${CARGO_TARGET_DIR:-$root/target}"

bin="${SNODO_BIN:-}"
if [[ -z "$bin" ]]; then
  if [[ -x "$target/release/snodo" ]]; then
    bin="$target/release/snodo"
  else
    if [[ ! -x "$target/debug/snodo" ]]; then
      echo "building snodo (debug) into $target ..." >&2
      (cd "$root" && CARGO_TARGET_DIR="$target" cargo build -q -p snodo-cli)
    fi
    bin="$target/debug/snodo"
  fi
fi

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
log="$(mktemp -t snodo-loadtest.XXXXXX.log)"
RUST_LOG="${RUST_LOG:-snodo=info,warn}" "$bin" fixture --addr "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; }
trap cleanup EXIT

for _ in $(seq 1 100); do
  if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "server died at start:"; cat "$log"; exit 1; fi
  sleep 0.1
done

echo "snodo under test: $bin (pid $pid, port $port), log $log"
summary="$(mktemp -t snodo-loadtest.XXXXXX.json)"
set +e
python3 "$here/client.py" --port "$port" --pid "$pid" --duration "$duration" \
  --clients "$clients" --idle "$idle" --log "$log" --json "$summary" ${SEED:+--seed "$SEED"}
rc=$?
set -e
read -r passed failed < <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['passed'], d['failed'])" "$summary" 2>/dev/null || echo "0 1")

# Graceful stop: SIGTERM, the server drains and exits within its drain timeout (10 s).
kill -TERM "$pid"
stopped=0
for _ in $(seq 1 150); do
  if ! kill -0 "$pid" 2>/dev/null; then stopped=1; break; fi
  sleep 0.1
done
trap - EXIT
if (( stopped )); then
  code=0; wait "$pid" || code=$?
  if [[ $code == 0 ]]; then
    echo "  [PASS] server stopped on SIGTERM (exit code 0)"; passed=$((passed + 1))
  else
    echo "  [FAIL] server stopped on SIGTERM with exit code $code"; failed=$((failed + 1))
  fi
else
  echo "  [FAIL] server still running 15 s after SIGTERM"; failed=$((failed + 1))
  kill -KILL "$pid" 2>/dev/null || true
fi
echo "loadtest: $passed passed, $failed failed"
if (( failed > 0 || rc != 0 )); then exit 1; fi
