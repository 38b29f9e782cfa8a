#!/usr/bin/env bash
# Real-client interop run: starts `snodo serve --legacy` on a fixture tree and
# drives it with the official MCP TypeScript SDKs at 2026-07-28, 2025-11-25 and
# 2025-06-18 (see README.md). Ends with "N passed, M failed"; exit 0 iff M == 0.
#
# Environment:
#   SNODO_BIN      server binary (default: <repo>/target/debug/snodo; not built here)
#   NODE           node binary (default: node on PATH; needs >= 20)
#   INTEROP_KEEP=1 keep the temporary folder (fixture, server log, wire traces)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
SNODO_BIN="${SNODO_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/snodo}"
NODE="${NODE:-node}"
VERSIONS=(2026-07-28 2025-11-25 2025-06-18)

die() { echo "interop: $*" >&2; echo "0 passed, 1 failed"; exit 2; }

# --- prerequisites -------------------------------------------------------------
command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE=/path/to/node, >= 20)"
node_major="$("$NODE" -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "node >= 20 required, found $("$NODE" --version)"

if [ ! -x "$SNODO_BIN" ]; then
    die "snodo binary not found or not executable at $SNODO_BIN (build it first, e.g. 'cargo build', or set SNODO_BIN)"
fi

installed_version() { # $1 = package name; prints the installed version or nothing
    "$NODE" -e 'try { process.stdout.write(require(process.argv[1] + "/package.json").version) } catch {}' \
        "$HERE/node_modules/$1" 2>/dev/null || true
}
if [ "$(installed_version @modelcontextprotocol/client)" != "2.4.0" ] ||
   [ "$(installed_version @modelcontextprotocol/sdk)" != "1.32.2" ]; then
    echo "interop: installing pinned SDKs (npm ci)" >&2
    (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci failed"
fi

# --- fixture tree ----------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/snodo-interop.XXXXXX")"
ROOT="$WORK/root"
mkdir -p "$ROOT/notes"
printf 'hello world\n' >"$ROOT/hello.txt"
printf '# todo\n\n- say hello to the interop clients\n- review hello.txt\n- ship it\n' >"$ROOT/notes/todo.md"

SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 20); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ "${INTEROP_KEEP:-}" = 1 ]; then
        echo "interop: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- server ----------------------------------------------------------------------
PORT="$("$NODE" -e '
const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => console.log(p)); });')"
URL="http://127.0.0.1:$PORT/mcp"

"$SNODO_BIN" serve --addr "127.0.0.1:$PORT" --root "$ROOT" --legacy >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
echo "interop: snodo serve pid $SERVER_PID on $URL, root $ROOT" >&2

# Ready = any HTTP answer to a POST (the status does not matter here).
probe() {
    "$NODE" -e '
fetch(process.argv[1], {
  method: "POST",
  headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "ping" }),
  signal: AbortSignal.timeout(2000)
}).then(r => process.exit(r.status > 0 ? 0 : 1), () => process.exit(1));' "$URL"
}
ready=""
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "interop: snodo serve exited early; its output:" >&2
        sed 's/^/  | /' "$WORK/server.log" >&2
        SERVER_PID=""
        die "server did not start"
    fi
    if probe; then ready=1; break; fi
    sleep 0.3
done
if [ -z "$ready" ]; then
    echo "interop: no answer on $URL within 30 s; server output:" >&2
    sed 's/^/  | /' "$WORK/server.log" >&2
    die "server not ready"
fi

# --- clients ---------------------------------------------------------------------
total_pass=0
total_fail=0
for v in "${VERSIONS[@]}"; do
    echo "== $v"
    out="$WORK/client-$v.out"
    tr="$WORK/trace-$v.log"
    set +e
    "$NODE" "$HERE/client.mjs" --url "$URL" --version "$v" --fixture --trace "$tr" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    set -e
    summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)"
    if [ -n "$summary" ]; then
        p="${summary%% passed*}"
        f="${summary#*passed, }"; f="${f%% failed}"
    else
        p=0; f=1
        echo "FAIL $v: client.mjs ended without a summary line (exit $rc)"
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $v: client.mjs exited $rc"; fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    if [ "$f" -ne 0 ]; then
        echo "-- wire trace for $v ($tr, last 200 lines):" >&2
        tail -n 200 "$tr" 2>/dev/null | sed 's/^/  | /' >&2 || true
    fi
done

if [ "$total_fail" -ne 0 ]; then
    echo "-- server output (last 50 lines):" >&2
    tail -n 50 "$WORK/server.log" | sed 's/^/  | /' >&2 || true
fi
if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "FAIL server: snodo serve exited during the run"
    total_fail=$((total_fail + 1))
    SERVER_PID=""
fi

echo "${total_pass} passed, ${total_fail} failed"
[ "$total_fail" -eq 0 ]
