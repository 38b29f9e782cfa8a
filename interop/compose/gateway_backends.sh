#!/usr/bin/env bash
# `snodo gateway` (the binary) in front of servers nobody here wrote (issue 33, "Real
# servers and clients"), driven by the official clients (issue 33) and completing
# through them (issue 32). One gateway, five backends, each under its namespace:
#   fs   @modelcontextprotocol/server-filesystem 2026.8.31 over stdio, serving a
#        directory with note.txt in it
#   py   the official Python SDK's FastMCP (mcp 1.30.0) over stdio: py_backend.py stdio
#   rm   rmcp 3.11's echo server over stdio (bench/rmcp-stdio, built here)
#   pyh  the same FastMCP server over Streamable HTTP with Mcp-Session-Id sessions
#        (--backend pyh=URL)
#   ev   @modelcontextprotocol/server-everything 2026.8.31 over stdio (its completions)
# Clients, on every front revision each speaks:
#   - @modelcontextprotocol/client 2.4.0 (2026-07-28) and @modelcontextprotocol/sdk
#     1.32.2 (2025-11-25, 2025-06-18, 2025-03-26): drive.mjs
#   - the Python client, mcp 1.30.0 (the three initialize-era revisions): drive.py
#   - the MCP Inspector 2.12.0 CLI (`--cli URL --method ...`; it initializes at 2025-11-25)
# What: list, call, read, prompt, progress and a cancellation where the backend has
# them; completion/complete of a prompt argument and of a resource template variable
# (front names and namespaced URIs, the backend's values back) for py, pyh and ev.
# Then no backend child is left after SIGTERM.
# One line per check, ends with "N passed, M failed"; exit 0 iff M == 0, 2 on setup
# errors. Every process listens on 127.0.0.1 and is stopped by PID.
#
# Needs `npm ci` in interop/compose and the venv .venv-mcp-1.30.0 (both made as .ci/run
# and run.sh make them; made here when missing). Environment:
#   SNODO_BIN        default <target>/debug/snodo (built when missing)
#   NODE, PYTHON     node >= 20, python >= 3.10
#   RMCP_STDIO_DIR   the rmcp stdio server's crate (default <repo>/bench/rmcp-stdio)
#   RMCP_TARGET_DIR  its cargo target dir (default <target>/rmcp-bench-server, shared with
#                    run.sh's rmcp HTTP server: the dependencies they share build once)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
SNODO_BIN="${SNODO_BIN:-$TARGET/debug/snodo}"
NODE="${NODE:-node}"
PYTHON="${PYTHON:-python3}"
RMCP_STDIO_DIR="${RMCP_STDIO_DIR:-$REPO/bench/rmcp-stdio}"
RMCP_TARGET_DIR="${RMCP_TARGET_DIR:-$TARGET/rmcp-bench-server}"
PY_MCP=1.30.0
VERSIONS=(2026-07-28 2025-11-25 2025-06-18 2025-03-26)

die() { echo "interop/compose/gateway_backends: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE, >= 20)"

# ---- installs ----------------------------------------------------------------------
. "$HERE/lib.sh"
npm_install
py_venv
[ -x "$SNODO_BIN" ] || (cd "$REPO" && cargo build -q -p snodo-cli >&2) || die "building snodo failed"
# No debug info: the rmcp servers are only run; theirs would be ~0.6 GB of CI disk.
CARGO_PROFILE_DEV_DEBUG=false cargo build -q --locked --manifest-path "$RMCP_STDIO_DIR/Cargo.toml" --target-dir "$RMCP_TARGET_DIR" >&2 ||
    die "building the rmcp stdio server failed"
RMCP_BIN="$RMCP_TARGET_DIR/debug/rmcp-stdio-bench-server"
EVERYTHING="$HERE/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM="$HERE/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
INSPECTOR="$HERE/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

# ---- processes ---------------------------------------------------------------------
export FS_ROOT="$WORK/shared"
mkdir -p "$FS_ROOT"
echo "hello from a file" >"$FS_ROOT/note.txt"
PYH_PORT=$(free_port)
GW_PORT=$(free_port)
start pyh "$PYH_PORT" "$VENV/bin/python" "$HERE/py_backend.py" "$PYH_PORT"
start gateway "$GW_PORT" env RUST_LOG="${RUST_LOG:-info}" RMCP_BENCH_WORKERS=1 "$SNODO_BIN" gateway \
    --addr "127.0.0.1:$GW_PORT" \
    --backend "fs=stdio:$NODE $FILESYSTEM $FS_ROOT" \
    --backend "py=stdio:$VENV/bin/python $HERE/py_backend.py stdio" \
    --backend "rm=stdio:$RMCP_BIN" \
    --backend "pyh=http://127.0.0.1:$PYH_PORT/mcp" \
    --backend "ev=stdio:$NODE $EVERYTHING stdio"
URL="http://127.0.0.1:$GW_PORT/mcp"
for b in fs py rm pyh ev; do
    check "gateway: backend $b up at start" grep -q "snodo gateway: \"$b\" up" "$WORK/gateway.log"
done

# ---- the TypeScript clients (v2 on 2026-07-28, v1 on the initialize era) -------------
label() { sed "s/^\(ok  *\|FAIL  *\)/&gateway $1: /"; }
ts() { tally "$(cd "$HERE" && "$NODE" drive.mjs "$URL" "$@" 2>&1 | label ts || true)"; }
py() { tally "$("$VENV/bin/python" "$HERE/drive.py" "$URL" "$@" 2>&1 | label python || true)"; }
for v in "${VERSIONS[@]}"; do
    ts "$v" fs fs list call
    ts "$v" py py list call read prompt progress cancel complete
    ts "$v" rm rmcp list call
    ts "$v" pyh py list call read prompt progress complete
    ts "$v" ev everything complete
done

# ---- the Python client (mcp 1.30.0 speaks the initialize era) ---------------------
for v in 2025-11-25 2025-06-18 2025-03-26; do
    py "$v" fs fs list call
    py "$v" py py list call read prompt progress complete
    py "$v" rm rmcp list call
    py "$v" pyh py list call read prompt complete
    py "$v" ev everything complete
done

# ---- the MCP Inspector CLI -----------------------------------------------------------
export MCP_CATALOG_PATH="$WORK/inspector-catalog.json" # not the user's ~/.mcp-inspector
inspector() { (cd "$HERE" && timeout 60 "$NODE" "$INSPECTOR" --cli "$URL" --transport http "$@" 2>&1) || true; }
has() { grep -qF -- "$2" <<<"$1"; }
OUT="$(inspector --method tools/list)"
for t in fs_read_text_file py_echo rm_echo pyh_count ev_echo; do
    check "inspector: tools/list has $t" has "$OUT" "\"name\": \"$t\""
done
OUT="$(inspector --method tools/call --tool-name fs_read_text_file --tool-arg "path=$FS_ROOT/note.txt")"
check "inspector: tools/call fs_read_text_file" has "$OUT" "hello from a file"
OUT="$(inspector --method tools/call --tool-name py_echo --tool-arg text=hi)"
check "inspector: tools/call py_echo" has "$OUT" '"text": "echo: hi"'
OUT="$(inspector --method tools/call --tool-name rm_echo --tool-arg text=from-the-inspector)"
check "inspector: tools/call rm_echo" has "$OUT" '"text": "from-the-inspector"'
OUT="$(inspector --method resources/read --uri note://py/greeting)"
check "inspector: resources/read note://py/greeting" has "$OUT" '"text": "hello from Python"'
OUT="$(inspector --method resources/templates/list)"
check "inspector: resources/templates/list has note://pyh/{name}" has "$OUT" '"uriTemplate": "note://pyh/{name}"'
OUT="$(inspector --method prompts/get --prompt-name pyh_greet --prompt-args who=Ada)"
check "inspector: prompts/get pyh_greet" has "$OUT" '"text": "Please greet Ada."'
check "inspector: spoke 2025-11-25" grep -q 'method="prompts/get" name="pyh_greet" dialect="2025-11-25"' "$WORK/gateway.log"

# ---- shutdown ----------------------------------------------------------------------
stop gateway
check "no backend child left after SIGTERM" \
    test -z "$(pgrep -f "$FILESYSTEM $FS_ROOT|$HERE/py_backend.py stdio|$RMCP_BIN|$EVERYTHING stdio" || true)"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
