#!/usr/bin/env bash
# Composition against servers nobody here wrote (issue 32): a front snodo
# (crates/snodo-compose/examples/compose_front.rs) serves its own tool `local_echo`
# beside four mounted backends, each under a namespace:
#   ev   @modelcontextprotocol/server-everything 2026.8.31 over stdio (a child of the front)
#   evh  the same server over Streamable HTTP (sessions)
#   py   the official Python SDK's FastMCP (mcp 1.30.0) over Streamable HTTP (sessions),
#        py_backend.py
#   rm   rmcp 3.11's bench server (tools only), built from RMCP_SERVER_DIR
# Driven on every front revision by the official TypeScript clients (drive.mjs:
# @modelcontextprotocol/client 2.4.0 for 2026-07-28, @modelcontextprotocol/sdk 1.32.2 for
# the initialize era) and the Python client (drive.py, mcp 1.30.0): list, call, read,
# prompt, progress, a cancellation; then each HTTP backend and the stdio child killed
# (they leave the lists, a call fails) and restarted (they come back).
# Then `snodo gateway --backend ev=stdio:…` (the binary) is driven the same way on
# every revision.
# One line per check, ends with "N passed, M failed"; exit 0 iff M == 0, 2 on setup
# errors. Every process listens on 127.0.0.1 and is stopped by PID.
#
# Environment:
#   FRONT_BIN        the front (default <target>/debug/examples/compose_front; built here
#                    with cargo when missing)
#   NODE, PYTHON     node >= 20, python >= 3.10
#   RMCP_SERVER_DIR  the rmcp bench server's crate (default <repo>/../shared/tools/bench/rmcp-server)
#   RMCP_TARGET_DIR  its cargo target dir (default <target>/rmcp-bench-server)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
FRONT_BIN="${FRONT_BIN:-$TARGET/debug/examples/compose_front}"
NODE="${NODE:-node}"
PYTHON="${PYTHON:-python3}"
RMCP_SERVER_DIR="${RMCP_SERVER_DIR:-$REPO/../shared/tools/bench/rmcp-server}"
RMCP_TARGET_DIR="${RMCP_TARGET_DIR:-$TARGET/rmcp-bench-server}"
PY_MCP=1.30.0
VERSIONS=(2026-07-28 2025-11-25 2025-06-18 2025-03-26)

die() { echo "interop/compose: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE, >= 20)"

# ---- installs ----------------------------------------------------------------------
. "$HERE/lib.sh"
npm_install
py_venv
if [ ! -x "$FRONT_BIN" ]; then
    (cd "$REPO" && cargo build -q -p snodo-compose --example compose_front >&2) || die "building compose_front failed"
fi
[ -f "$RMCP_SERVER_DIR/Cargo.toml" ] || die "no rmcp bench server at $RMCP_SERVER_DIR (set RMCP_SERVER_DIR)"
# No debug info: the rmcp servers are only run; theirs would be ~0.6 GB of CI disk.
CARGO_PROFILE_DEV_DEBUG=false cargo build -q --locked --manifest-path "$RMCP_SERVER_DIR/Cargo.toml" --target-dir "$RMCP_TARGET_DIR" >&2 ||
    die "building the rmcp bench server failed"
RMCP_BIN="$RMCP_TARGET_DIR/debug/rmcp-bench-server"
EVERYTHING="$HERE/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

# ---- processes ---------------------------------------------------------------------
EVH_PORT=$(free_port)
PY_PORT=$(free_port)
RM_PORT=$(free_port)
FRONT_PORT=$(free_port)
start_evh() { start evh "$EVH_PORT" env PORT="$EVH_PORT" "$NODE" --require "$HERE/loopback.cjs" "$EVERYTHING" streamableHttp; }
start_py() { start py "$PY_PORT" "$VENV/bin/python" "$HERE/py_backend.py" "$PY_PORT"; }
start_rm() { start rm "$RM_PORT" env RMCP_BENCH_STATEFUL=1 RMCP_BENCH_SSE=1 RMCP_BENCH_WORKERS=1 "$RMCP_BIN" "127.0.0.1:$RM_PORT"; }
start_evh
start_py
start_rm
start front "$FRONT_PORT" env RUST_LOG="${RUST_LOG:-snodo_compose=info}" "$FRONT_BIN" "127.0.0.1:$FRONT_PORT" \
    "ev=stdio:$NODE $EVERYTHING stdio" \
    "evh=http://127.0.0.1:$EVH_PORT/mcp" \
    "py=http://127.0.0.1:$PY_PORT/mcp" \
    "rm=http://127.0.0.1:$RM_PORT/mcp"
URL="http://127.0.0.1:$FRONT_PORT/mcp"
for _ in $(seq 100); do grep -q '^ready' "$WORK/front.log" && break; sleep 0.1; done

# ---- checks ------------------------------------------------------------------------
ts() { tally "$(cd "$HERE" && "$NODE" drive.mjs "$URL" "$@" 2>&1 || true)"; }
py() { tally "$("$VENV/bin/python" "$HERE/drive.py" "$URL" "$@" 2>&1 || true)"; }
for v in "${VERSIONS[@]}"; do
    ts "$v" ev everything
    ts "$v" evh everything
    ts "$v" py py
    ts "$v" rm rmcp
done
for v in 2025-11-25 2025-06-18 2025-03-26; do
    py "$v" ev everything
    py "$v" py py
    py "$v" rm rmcp
done

# Kill and restart. The front checks an idle backend every 5 s.
tools() { (cd "$HERE" && "$NODE" --input-type=module -e '
    const { Client } = await import("@modelcontextprotocol/client");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
    const c = new Client({ name: "t", version: "1" }, { capabilities: {}, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await c.connect(new StreamableHTTPClientTransport(new URL(process.argv[1])));
    const { tools } = await c.listTools();
    console.log(tools.map(t => t.name).join(" "));
    await c.close();
' "$URL" 2>/dev/null) || true; }
has_tool() { tools | tr ' ' '\n' | grep -qx "$1"; }
lacks_tool() { ! has_tool "$1"; }
for b in py evh rm; do
    case $b in py) t=py_echo ;; evh) t=evh_echo ;; rm) t=rm_echo ;; esac
    stop "$b"
    check "$b killed: $t leaves the front's list" eventually 20 lacks_tool "$t"
    check "$b killed: local_echo still listed" has_tool local_echo
    "start_$b"
    check "$b restarted: $t back in the list" eventually 30 has_tool "$t"
done
(cd "$HERE" && "$NODE" drive.mjs "$URL" 2026-07-28 py py call >/dev/null 2>&1) &&
    check "py restarted: a call goes through" true || check "py restarted: a call goes through" false
# The stdio child: killed; the front notices at its next check (or call) and starts a
# new child at once, so the components may never leave the list: a new process serves.
CHILD=$(pgrep -P "${PIDS[front]}" -f server-everything || true)
if [ -n "$CHILD" ]; then
    kill -KILL "$CHILD" 2>/dev/null || true
    new_child() { local n; n=$(pgrep -P "${PIDS[front]}" -f server-everything || true); [ -n "$n" ] && [ "$n" != "$CHILD" ]; }
    check "ev child killed: the front starts a new one" eventually 30 new_child
    check "ev child restarted: ev_echo listed" eventually 30 has_tool ev_echo
else
    check "ev child found under the front" false
fi
tally "$(cd "$HERE" && "$NODE" drive.mjs "$URL" 2025-11-25 ev everything call 2>&1 || true)"

stop front

# ---- snodo gateway: the binary, server-everything namespaced, the official clients --
SNODO_BIN="${SNODO_BIN:-$TARGET/debug/snodo}"
[ -x "$SNODO_BIN" ] || (cd "$REPO" && cargo build -q -p snodo-cli >&2) || die "building snodo failed"
GW_PORT=$(free_port)
start gateway "$GW_PORT" "$SNODO_BIN" gateway --addr "127.0.0.1:$GW_PORT" \
    --backend "ev=stdio:$NODE $EVERYTHING stdio"
for v in 2026-07-28 2025-11-25 2025-06-18 2025-03-26; do
    tally "$(cd "$HERE" && "$NODE" drive.mjs "http://127.0.0.1:$GW_PORT/mcp" "$v" ev everything \
        call read prompt progress cancel 2>&1 | sed 's/^\(ok  *\|FAIL  *\)/&gateway: /' || true)"
done
stop gateway

check "no backend child left after the front stopped" test -z "$(pgrep -f "$EVERYTHING stdio" || true)"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
