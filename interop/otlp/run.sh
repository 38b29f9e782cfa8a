#!/usr/bin/env bash
# OTLP export (issue 19): `snodo serve --otlp-endpoint` (built with the `otlp`
# feature) sends its request spans to a receiver that is not ours: an OTLP/HTTP
# receiver built on the official `opentelemetry-proto` definitions (PyPI, pinned in
# requirements.txt; no OpenTelemetry Collector can be installed from the registries
# reachable here). The lane checks, over stdio and HTTP, that each span lies in the
# caller's trace with the caller's span as parent (from `_meta.traceparent`, and from
# the W3C `traceparent` header), named and attributed after the MCP conventions.
# It also runs the feature's own tests (cargo test -p snodo --features otlp).
# Ends with "N passed, M failed"; exit 0 iff M == 0. Everything on 127.0.0.1; every
# process stopped by PID.
#
# Environment: PYTHON (>= 3.9, default python3), CARGO (default cargo).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
CARGO="${CARGO:-cargo}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"

die() { echo "otlp: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
command -v "$PYTHON" >/dev/null || die "python3 not found"

echo "otlp: the feature's tests"
(cd "$REPO" && "$CARGO" test -q -p snodo --features otlp --test otel 2>&1) | tail -n 3 ||
    die "cargo test --features otlp failed"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/snodo-otlp.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

# The binary with the feature, kept apart; the default build is restored after.
(cd "$REPO" && "$CARGO" build -q -p snodo-cli --features otlp) || die "cargo build --features otlp failed"
cp "$TARGET/debug/snodo" "$WORK/snodo-otlp"
(cd "$REPO" && "$CARGO" build -q -p snodo-cli) || die "cargo build (default features) failed"
SNODO="$WORK/snodo-otlp"

venv="$HERE/.venv"
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('opentelemetry-proto') != '1.45.2')" 2>/dev/null; then
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv" || die "cannot create $venv (Debian: apt-get install python3-venv)"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt" >&2 ||
        die "pip install opentelemetry-proto failed"
fi

port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
OTLP_PORT="$(port)"; MCP_PORT="$(port)"
SPANS="$WORK/spans.jsonl"
ENDPOINT="http://127.0.0.1:$OTLP_PORT/v1/traces"
mkdir -p "$WORK/root"; printf 'hello spans\n' >"$WORK/root/hello.txt"

"$venv/bin/python" "$HERE/receiver.py" "$OTLP_PORT" "$SPANS" >"$WORK/receiver.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do
    "$PYTHON" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" \
        "http://127.0.0.1:$OTLP_PORT/ready" 2>/dev/null && break
    sleep 0.1
done

# stdio: one request, then end of input; the exporter flushes at exit.
"$PYTHON" "$HERE/check.py" - - stdio-input |
    timeout 30 "$SNODO" serve --stdio --root "$WORK/root" --otlp-endpoint "$ENDPOINT" \
        >"$WORK/stdio.out" 2>"$WORK/stdio.err" || die "the stdio run failed: $(tail -n 5 "$WORK/stdio.err")"

# HTTP: two requests, then SIGTERM (graceful: the exporter flushes).
"$SNODO" serve --addr "127.0.0.1:$MCP_PORT" --root "$WORK/root" --otlp-endpoint "$ENDPOINT" \
    >"$WORK/http.log" 2>&1 &
HTTP_PID=$!
PIDS+=("$HTTP_PID")
for _ in $(seq 1 100); do
    "$PYTHON" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" \
        "http://127.0.0.1:$MCP_PORT/healthz" 2>/dev/null && break
    sleep 0.1
done
"$PYTHON" "$HERE/check.py" "$MCP_PORT" - http || die "the HTTP requests failed: $(tail -n 5 "$WORK/http.log")"
kill -TERM "$HTTP_PID"
wait "$HTTP_PID" 2>/dev/null || true

set +e
"$PYTHON" "$HERE/check.py" - "$SPANS" check
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
    echo "--- stdio stderr"; tail -n 10 "$WORK/stdio.err"
    echo "--- http log"; tail -n 10 "$WORK/http.log"
    echo "--- receiver log"; tail -n 10 "$WORK/receiver.log"
fi
exit "$rc"
