#!/usr/bin/env bash
# Real-client interop over stdio: the official TypeScript SDKs (v2 client with automatic
# negotiation, v1 client at 2025-11-25) and the Python SDK (`mcp`, auto and legacy) launch
# `snodo serve --stdio` and `snodo fixture --stdio` as child processes: tools, resources,
# prompts and one cancellation each. The MCP Inspector CLI (one call per process, so no
# cancellation) lists and calls tools, reads a resource and gets a prompt. Ends with "N passed, M failed"; exit 0 iff M == 0.
#
# Environment:
#   SNODO_BIN  server binary (default: <repo>/target/debug/snodo; not built here)
#   NODE       node binary (default: node on PATH; >= 20)
#   PYTHON     python for the venv (default: python3; >= 3.10)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
SNODO_BIN="${SNODO_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/snodo}"
NODE="${NODE:-node}"
PYTHON="${PYTHON:-python3}"
MCP_PY_VERSION=2.3.0

die() { echo "interop/stdio: $*" >&2; echo "0 passed, 1 failed"; exit 2; }

command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE, >= 20)"
[ -x "$SNODO_BIN" ] || die "snodo binary not found at $SNODO_BIN (build it first or set SNODO_BIN)"

installed_version() {
    "$NODE" -e 'try { process.stdout.write(require(process.argv[1] + "/package.json").version) } catch {}' \
        "$HERE/node_modules/$1" 2>/dev/null || true
}
if [ "$(installed_version @modelcontextprotocol/client)" != "2.4.0" ] ||
   [ "$(installed_version @modelcontextprotocol/sdk)" != "1.32.2" ] ||
   [ "$(installed_version @modelcontextprotocol/inspector-cli)" != "1.0.3" ]; then
    echo "interop/stdio: installing pinned SDKs (npm ci)" >&2
    (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci failed"
fi

VENV="$HERE/.venv"
if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_PY_VERSION')" 2>/dev/null; then
    if ! "$PYTHON" -m venv --help >/dev/null 2>&1; then
        echo "interop/stdio: installing python3-venv" >&2
        (apt-get update -qq && apt-get install -y -qq python3-venv python3-pip) >&2 || die "cannot install python3-venv"
    fi
    echo "interop/stdio: installing mcp==$MCP_PY_VERSION into $VENV" >&2
    "$PYTHON" -m venv "$VENV" >&2 || die "venv failed"
    "$VENV/bin/pip" install -q "mcp==$MCP_PY_VERSION" >&2 || die "pip install mcp==$MCP_PY_VERSION failed"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/snodo-stdio-interop.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
ROOT="$WORK/root"
mkdir -p "$ROOT/notes"
printf 'hello world\n' >"$ROOT/hello.txt"
printf '# todo\n\n- say hello over stdio\n' >"$ROOT/notes/todo.md"

total_pass=0
total_fail=0
run() { # name, command...
    local name="$1"; shift
    echo "== $name"
    local out="$WORK/$name.out"
    set +e
    timeout 120 "$@" 2>"$WORK/$name.err" | tee "$out"
    local rc=${PIPESTATUS[0]}
    set -e
    local summary p f
    summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)"
    if [ -n "$summary" ]; then
        p="${summary%% passed*}"; f="${summary#*passed, }"; f="${f%% failed}"
    else
        p=0; f=1; echo "FAIL $name: no summary line (exit $rc)"
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $name: exit $rc"; fi
    if [ "$f" -ne 0 ]; then sed 's/^/  | /' "$WORK/$name.err" | tail -n 40 >&2; fi
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
}

run ts-v2 "$NODE" "$HERE/stdio.mjs" --sdk v2 --bin "$SNODO_BIN" --root "$ROOT"
run ts-v1 "$NODE" "$HERE/stdio.mjs" --sdk v1 --bin "$SNODO_BIN" --root "$ROOT"
run py-auto "$VENV/bin/python" "$HERE/stdio_client.py" --mode auto --bin "$SNODO_BIN" --root "$ROOT" --work "$WORK"
run py-legacy "$VENV/bin/python" "$HERE/stdio_client.py" --mode legacy --bin "$SNODO_BIN" --root "$ROOT" --work "$WORK"

# The Inspector CLI resolves its own package.json against the working directory.
INSPECTOR_DIR="$HERE/node_modules/@modelcontextprotocol/inspector-cli/build"
inspector_check() { # name, expected text, inspector arguments...
    local name="$1" want="$2"; shift 2
    local got
    if got="$(cd "$INSPECTOR_DIR" && timeout 60 "$NODE" index.js "$SNODO_BIN" serve --stdio --legacy --root "$ROOT" "$@" 2>>"$WORK/inspector.err")" &&
       printf '%s' "$got" | grep -q -- "$want"; then
        echo "ok $name"; ins_pass=$((ins_pass + 1))
    else
        echo "FAIL $name: $(printf '%s' "$got" | head -c 300 | tr '\n' ' ')"; ins_fail=$((ins_fail + 1))
    fi
}
echo "== inspector-cli"
ins_pass=0; ins_fail=0
inspector_check "tools/list" '"name": "search"' --method tools/list
inspector_check "tools/call search" '"path": "hello.txt"' --method tools/call --tool-name search --tool-arg query=hello
inspector_check "resources/read" 'hello world' --method resources/read --uri "file://$ROOT/hello.txt"
inspector_check "prompts/get review_file" 'hello world' --method prompts/get --prompt-name review_file --prompt-args path=hello.txt
echo "${ins_pass} passed, ${ins_fail} failed"
[ "$ins_fail" -eq 0 ] || sed 's/^/  | /' "$WORK/inspector.err" | tail -n 20 >&2
total_pass=$((total_pass + ins_pass)); total_fail=$((total_fail + ins_fail))

echo "${total_pass} passed, ${total_fail} failed"
[ "$total_fail" -eq 0 ]
