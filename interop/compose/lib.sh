# Shared by the interop/compose scripts (sourced): installs, background processes on
# 127.0.0.1 stopped by PID (their output in $WORK/NAME.log), and the tally of
# "ok"/"FAIL" lines. Expects HERE, NODE and die(); WORK is made here unless the
# sourcing script made it, and a script with processes of its own names redefines
# cleanup() and its trap after sourcing.

installed() { # the installed version of an npm package, or nothing
    "$NODE" -e 'try { process.stdout.write(require(process.argv[1] + "/package.json").version) } catch {}' \
        "$HERE/node_modules/$1" 2>/dev/null || true
}
npm_install() { # package.json's pins (servers, clients, the Inspector), unless present
    if [ "$(installed @modelcontextprotocol/server-everything)" != 2026.8.31 ] ||
        [ "$(installed @modelcontextprotocol/server-filesystem)" != 2026.8.31 ] ||
        [ "$(installed @modelcontextprotocol/inspector)" != 2.12.0 ] ||
        [ "$(installed @modelcontextprotocol/client)" != 2.4.0 ]; then
        echo "interop/compose: npm ci" >&2
        (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci failed"
    fi
}

WORK="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/snodo-compose-interop.XXXXXX")}"
declare -A PIDS=()
py_venv() { # VENV: the official Python SDK (mcp $PY_MCP) in .venv-mcp-$PY_MCP, made when missing
    VENV="$HERE/.venv-mcp-$PY_MCP"
    if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP')" 2>/dev/null; then
        rm -rf "$VENV"
        "$PYTHON" -m venv "$VENV" >&2 || die "python3 -m venv failed (apt-get install python3-venv)"
        "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/../client/requirements-mcp-$PY_MCP.txt" >&2 ||
            die "pip install mcp==$PY_MCP failed"
    fi
}

stop() {
    local pid="${PIDS[$1]:-}"
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset "PIDS[$1]"
}
cleanup() {
    for n in front gateway "${!PIDS[@]}"; do stop "$n"; done
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    "$NODE" -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}
wait_port() {
    for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# start NAME PORT CMD...: a background process, its output in $WORK/NAME.log
start() {
    local name="$1" port="$2"
    shift 2
    "$@" >"$WORK/$name.log" 2>&1 &
    PIDS[$name]=$!
    wait_port "$port" || { tail -20 "$WORK/$name.log" >&2; die "$name did not listen on $port"; }
}

PASS=0
FAIL=0
tally() { # a driver's output: count its lines (a driver that reported nothing failed)
    local out="$1" ok fail
    echo "$out"
    ok=$(grep -c '^ok ' <<<"$out" || true)
    fail=$(grep -c '^FAIL ' <<<"$out" || true)
    if [ "$ok" -eq 0 ] && [ "$fail" -eq 0 ]; then
        echo "FAIL a driver reported nothing: $(tail -c 300 <<<"$out")"
        fail=1
    fi
    PASS=$((PASS + ok))
    FAIL=$((FAIL + fail))
}
check() { # check NAME CMD...: one line for a shell condition
    if "${@:2}"; then echo "ok   $1"; PASS=$((PASS + 1)); else echo "FAIL $1"; FAIL=$((FAIL + 1)); fi
}
# eventually SECONDS CMD...: whether CMD succeeds within SECONDS (tried every 0.3 s).
eventually() {
    local until=$((SECONDS + $1))
    shift
    while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.3; done
    return 1
}
