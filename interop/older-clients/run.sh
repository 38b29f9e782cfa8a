#!/usr/bin/env bash
# Older and header-less clients against `snodo serve` with NO protocol flags (issue 13):
# the demo must connect every client in the field with no special configuration.
#   - TypeScript SDK 1.11.5: 2025-03-26, never sends MCP-Protocol-Version
#   - TypeScript SDK 1.32.2 behind a fetch that drops the header (what Gemini CLI 0.61 does)
#   - Python mcp 1.9.4: 2025-03-26, never sends the header
#   - Python mcp 2.3.0: ClientSession.initialize() (2025-11-25)
# Each client lists tools, calls a tool, reads a resource and gets a prompt.
# Ends with "N passed, M failed"; exit 0 iff M == 0.
#
# Environment: SNODO_BIN (default <repo>/target/debug/snodo), NODE, PYTHON (>= 3.10).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SNODO_BIN="${SNODO_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/snodo}"
NODE="${NODE:-node}"
PYTHON="${PYTHON:-python3}"

die() { echo "older-clients: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
[ -x "$SNODO_BIN" ] || die "no snodo binary at $SNODO_BIN (cargo build -p snodo-cli)"
command -v "$NODE" >/dev/null || die "node not found"
command -v "$PYTHON" >/dev/null || die "python3 not found"

# --- pinned clients, installed by name ---------------------------------------------
if [ "$("$NODE" -e 'try{process.stdout.write(require(process.argv[1]).version)}catch{}' \
        "$HERE/node_modules/sdk-2025-03-26/package.json")" != "1.11.5" ]; then
    (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci failed"
fi
for v in 1.9.4 2.3.0; do
    venv="$HERE/.venv-mcp-$v"
    if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$v')" 2>/dev/null; then
        rm -rf "$venv"
        "$PYTHON" -m venv "$venv" || die "cannot create $venv (Debian: apt-get install python3-venv)"
        "$venv/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements-mcp-$v.txt" >&2 ||
            die "pip install mcp==$v failed"
    fi
done

# --- the demo, as a user starts it ----------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/snodo-older-clients.XXXXXX")"
mkdir -p "$WORK/root/notes"
printf 'hello world\n' >"$WORK/root/hello.txt"
printf '# notes\n' >"$WORK/root/notes/todo.md"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
URL="http://127.0.0.1:$PORT/mcp"
"$SNODO_BIN" serve --addr "127.0.0.1:$PORT" --root "$WORK/root" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
    "$PYTHON" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "http://127.0.0.1:$PORT/healthz" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "snodo serve exited"; }
    sleep 0.1
done

total_pass=0
total_fail=0
run_client() { # name, command...
    local name="$1"; shift
    echo "== $name"
    local out="$WORK/$name.out" rc=0
    "$@" 2>&1 | tee "$out" || rc=$?
    local summary p f
    summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)"
    if [ -n "$summary" ]; then
        p="${summary%% passed*}"; f="${summary#*passed, }"; f="${f%% failed}"
    else
        p=0; f=1; echo "FAIL $name: no summary line (exit $rc)"
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $name: exit $rc"; fi
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
}
run_client ts-sdk-1.11.5 "$NODE" "$HERE/client.mjs" --url "$URL" --client sdk-2025-03-26
run_client ts-sdk-1.32.2-header-dropped "$NODE" "$HERE/client.mjs" --url "$URL" --client header-dropping
run_client python-mcp-1.9.4 "$HERE/.venv-mcp-1.9.4/bin/python" "$HERE/py_client.py" "$URL"
run_client python-mcp-2.3.0 "$HERE/.venv-mcp-2.3.0/bin/python" "$HERE/py_client.py" "$URL"

if [ "$total_fail" -ne 0 ]; then
    echo "-- server output (last 50 lines):" >&2
    tail -n 50 "$WORK/server.log" >&2 || true
fi
echo "${total_pass} passed, ${total_fail} failed"
[ "$total_fail" -eq 0 ]
