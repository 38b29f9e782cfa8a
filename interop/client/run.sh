#!/usr/bin/env bash
# `snodo client` against MCP servers nobody here wrote, on 127.0.0.1 and over stdio:
#   - the official TypeScript SDK v2 server (@modelcontextprotocol/server 2.4.0, npm ci),
#     one factory for 2026-07-28 and its stateless 2025 fallback (ts_server.mjs);
#   - the official Python SDK: MCPServer from mcp 2.3.0 (both eras, Mcp-Session-Id for the
#     2025 era) and FastMCP from mcp 1.30.0 (initialize era only, sessions), py_server.py,
#     each in its own venv here (pinned requirements files);
#   - the rmcp 3.11 bench server of ../shared/tools/bench/rmcp-server (built with cargo,
#     about 3 minutes on 2 cores the first time), stateless JSON and sessions + SSE.
# For each server and protocol (auto and every version the server speaks): tools/list,
# tools/call (and `call k=v` typed by the tool's schema: text=5 a string, times=2 an
# integer), resources/list + resources/read and prompts/get (rmcp: tools only; it serves
# no resources or prompts, and resources/list must be a JSON-RPC error with exit 1).
# One line per check, ends with "N passed, M failed"; exit 0 iff M == 0, 2 on setup errors.
#
# Environment:
#   SNODO_BIN         the binary (default <repo>/target/debug/snodo; not built here)
#   NODE              node >= 20 (default: node on PATH)
#   PYTHON            python >= 3.10 for the venvs (default python3)
#   RMCP_SERVER_DIR   the rmcp bench server's crate (default <repo>/../shared/tools/bench/rmcp-server)
#   RMCP_TARGET_DIR   its cargo target dir (default <repo>/target/rmcp-bench-server)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SNODO_BIN="${SNODO_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/snodo}"
NODE="${NODE:-node}"
PYTHON="${PYTHON:-python3}"
RMCP_SERVER_DIR="${RMCP_SERVER_DIR:-$REPO/../shared/tools/bench/rmcp-server}"
RMCP_TARGET_DIR="${RMCP_TARGET_DIR:-$REPO/target/rmcp-bench-server}"
TS_SERVER_VERSION=2.4.0
PY_VERSIONS=(2.3.0 1.30.0)

die() { echo "interop/client: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE, >= 20)"
[ -x "$SNODO_BIN" ] || die "snodo binary not found at $SNODO_BIN (cargo build -p snodo-cli, or set SNODO_BIN)"

# ---- installs -------------------------------------------------------------------
installed_version() {
    "$NODE" -e 'try { process.stdout.write(require(process.argv[1] + "/package.json").version) } catch {}' \
        "$HERE/node_modules/$1" 2>/dev/null || true
}
if [ "$(installed_version @modelcontextprotocol/server)" != "$TS_SERVER_VERSION" ]; then
    echo "interop/client: installing the pinned TypeScript SDK server (npm ci)" >&2
    (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci failed"
fi
for v in "${PY_VERSIONS[@]}"; do
    venv="$HERE/.venv-mcp-$v"
    if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$v')" 2>/dev/null; then
        if ! "$PYTHON" -m venv --help >/dev/null 2>&1; then
            (apt-get update -qq && apt-get install -y -qq python3-venv python3-pip) >&2 || die "cannot install python3-venv"
        fi
        rm -rf "$venv"
        echo "interop/client: installing mcp==$v into $venv" >&2
        "$PYTHON" -m venv "$venv" >&2 || die "venv failed"
        req="$HERE/requirements-mcp-$v.txt"
        [ -f "$req" ] || req="$HERE/../older-clients/requirements-mcp-$v.txt"
        "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2 || die "pip install mcp==$v failed"
    fi
done
RMCP_BIN="$RMCP_TARGET_DIR/debug/rmcp-bench-server"
[ -f "$RMCP_SERVER_DIR/Cargo.toml" ] || die "no rmcp bench server at $RMCP_SERVER_DIR (set RMCP_SERVER_DIR)"
echo "interop/client: building the rmcp bench server (cargo, debug)" >&2
# No debug info: the rmcp servers are only run; theirs would be ~0.6 GB of CI disk.
CARGO_PROFILE_DEV_DEBUG=false cargo build -q --locked --manifest-path "$RMCP_SERVER_DIR/Cargo.toml" --target-dir "$RMCP_TARGET_DIR" >&2 ||
    die "building the rmcp bench server failed"

# ---- servers ----------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/snodo-client-interop.XXXXXX")"
SERVER_PID=""
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}
trap 'stop_server; rm -rf "$WORK"' EXIT

free_port() {
    "$NODE" -e 'const s = require("net").createServer();
      s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# start NAME command...: {PORT} in an argument becomes a free port; sets URL.
start() {
    local name="$1"; shift
    local port args=()
    port="$(free_port)"
    URL="http://127.0.0.1:$port/mcp"
    for a in "$@"; do args+=("${a//\{PORT\}/$port}"); done
    "${args[@]}" >"$WORK/$name.log" 2>&1 </dev/null &
    SERVER_PID=$!
    for _ in $(seq 150); do
        kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 20 "$WORK/$name.log" >&2; die "$name exited at start"; }
        if curl -s -o /dev/null --max-time 2 "$URL"; then return 0; fi
        sleep 0.1
    done
    tail -n 20 "$WORK/$name.log" >&2
    die "$name did not answer at $URL"
}

# ---- checks -----------------------------------------------------------------------
pass=0
fail=0
# check LABEL JS_PREDICATE(r) snodo-client-args...  (r: the parsed stdout; exit 0 expected)
check() {
    local label="$1" pred="$2"; shift 2
    local out rc=0
    out="$(timeout 60 "$SNODO_BIN" client "$@" 2>"$WORK/err")" || rc=$?
    if [ "$rc" -eq 0 ] && printf '%s' "$out" | "$NODE" -e "
        let s = ''; process.stdin.on('data', (d) => (s += d)).on('end', () => {
          const r = JSON.parse(s); process.exit(($pred) ? 0 : 1); });" 2>>"$WORK/err"; then
        echo "ok   $label"; pass=$((pass + 1))
    else
        echo "FAIL $label (exit $rc): $(printf '%s' "$out" | tr '\n' ' ' | head -c 300) $(tail -n 3 "$WORK/err" | tr '\n' ' ')"
        fail=$((fail + 1))
    fi
}
# check_error LABEL CODE_REGEX snodo-client-args...  (exit 1, the JSON-RPC error's code on stderr)
check_error() {
    local label="$1" code="$2"; shift 2
    local rc=0
    timeout 60 "$SNODO_BIN" client "$@" >/dev/null 2>"$WORK/err" || rc=$?
    if [ "$rc" -eq 1 ] && tail -n 1 "$WORK/err" | grep -Eq "\"code\":$code[,}]"; then
        echo "ok   $label"; pass=$((pass + 1))
    else
        echo "FAIL $label: exit $rc, $(tail -n 2 "$WORK/err" | tr '\n' ' ')"; fail=$((fail + 1))
    fi
}

# full NAME PROTOCOL server-args...: list, call, read, prompt
full() {
    local name="$1" p="$2"; shift 2
    check "$name $p tools/list" "r.tools.some((t) => t.name === 'echo')" "$@" --protocol "$p" tools/list
    check "$name $p tools/call" "r.content[0].text.includes('hi') && !r.isError" "$@" --protocol "$p" call echo text=hi
    # k=v typed by the tool's schema: 5 stays the string text asks for, 2 the integer times asks for.
    check "$name $p call echo text=5 (a string)" "r.content[0].text.endsWith(' 5') && !r.isError" "$@" --protocol "$p" call echo text=5
    check "$name $p call repeat times=2 (an integer)" "r.content[0].text === 'abab' && !r.isError" "$@" --protocol "$p" call repeat text=ab times=2
    check "$name $p resources/list" "r.resources.some((x) => x.uri === 'note://greeting')" "$@" --protocol "$p" resources/list
    check "$name $p resources/read" "r.contents[0].text.startsWith('hello from')" "$@" --protocol "$p" resources/read '{"uri":"note://greeting"}'
    check "$name $p prompts/get" "r.messages[0].content.text === 'Hello, snodo!'" "$@" --protocol "$p" prompts/get '{"name":"greet","arguments":{"who":"snodo"}}'
}
# tools_only NAME PROTOCOL server-args...: rmcp (no resources, no prompts)
tools_only() {
    local name="$1" p="$2"; shift 2
    check "$name $p tools/list" "r.tools.some((t) => t.name === 'echo')" "$@" --protocol "$p" tools/list
    check "$name $p tools/call" "r.content[0].text === 'hi' && !r.isError" "$@" --protocol "$p" call echo text=hi
    check "$name $p call echo text=5 (a string)" "r.content[0].text === '5' && !r.isError" "$@" --protocol "$p" call echo text=5
    check_error "$name $p resources/list (not served)" -32601 "$@" --protocol "$p" resources/list
}
# modern NAME server-args...: auto picks 2026-07-28 (server/discover answers)
modern() {
    check "$1 auto server/discover" "r.supportedVersions.includes('2026-07-28')" "${@:2}" server/discover
}

echo "== TypeScript SDK v2 server (@modelcontextprotocol/server $TS_SERVER_VERSION)"
start ts-v2 "$NODE" "$HERE/ts_server.mjs" "{PORT}"
modern ts-v2 --url "$URL"
for p in auto 2026-07-28 2025-11-25 2025-06-18 2025-03-26; do full ts-v2 "$p" --url "$URL"; done
stop_server
for p in auto 2025-11-25; do full ts-v2-stdio "$p" --stdio "$NODE $HERE/ts_server.mjs stdio"; done

echo "== Python SDK: MCPServer (mcp 2.3.0)"
PY2="$HERE/.venv-mcp-2.3.0/bin/python"
start py-mcp-2.3.0 "$PY2" "$HERE/py_server.py" "{PORT}"
modern py-mcp-2.3.0 --url "$URL"
for p in auto 2026-07-28 2025-11-25 2025-06-18; do full py-mcp-2.3.0 "$p" --url "$URL"; done
stop_server
for p in auto 2025-11-25; do full py-mcp-2.3.0-stdio "$p" --stdio "$PY2 $HERE/py_server.py stdio"; done

echo "== Python SDK: FastMCP (mcp 1.30.0, initialize era, sessions)"
PY1="$HERE/.venv-mcp-1.30.0/bin/python"
start py-fastmcp-1.30.0 "$PY1" "$HERE/py_server.py" "{PORT}"
# Any JSON-RPC error (it answers -32602 inside its session): no 2026-07-28 here.
check_error "py-fastmcp-1.30.0 auto server/discover (initialize era)" '-32[0-9]{3}' --url "$URL" server/discover
for p in auto 2025-11-25 2025-06-18 2025-03-26; do full py-fastmcp-1.30.0 "$p" --url "$URL"; done
stop_server
full py-fastmcp-1.30.0-stdio auto --stdio "$PY1 $HERE/py_server.py stdio"

echo "== rmcp 3.11 bench server"
for mode in stateless-json sessions-sse; do
    if [ "$mode" = sessions-sse ]; then
        start "rmcp-$mode" env RMCP_BENCH_STATEFUL=1 RMCP_BENCH_SSE=1 RMCP_BENCH_WORKERS=1 "$RMCP_BIN" "127.0.0.1:{PORT}"
    else
        start "rmcp-$mode" env RMCP_BENCH_WORKERS=1 "$RMCP_BIN" "127.0.0.1:{PORT}"
    fi
    modern "rmcp-$mode" --url "$URL"
    for p in auto 2026-07-28 2025-11-25 2025-06-18 2025-03-26; do tools_only "rmcp-$mode" "$p" --url "$URL"; done
    stop_server
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
