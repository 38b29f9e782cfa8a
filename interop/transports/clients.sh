#!/usr/bin/env bash
# Official MCP SDK clients speaking HTTP/2 to snodo (issue 36), over TLS (ALPN h2) and
# in cleartext (prior knowledge, h2c):
#   - the TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0) with undici
#     7.30.3's fetch, an Agent with `allowH2` (TLS) or `useH2c` (cleartext), h2_client.mjs;
#   - the Python SDK client (mcp 1.30.0) with an httpx 0.29 client, `http2=True` (the h2
#     package; `http1=False` for prior knowledge), h2_client.py.
#
#   bash interop/transports/clients.sh [SNODO_BINARY]
#
# For each client and each of TLS and h2c: starts `snodo fixture` on a free port of
# 127.0.0.1 (a throwaway CA and a certificate for 127.0.0.1 and localhost made with
# openssl for TLS), runs the client (connect, list, call, progress over SSE, 20 calls at
# once, each connection or response seen by the client as HTTP/2), then checks the
# server's own log: every connection it served was HTTP/2 (`serving a connection
# protocol="h2"`, snodo::http::conn at debug), and it answered the client's requests.
# Stops the server by PID. Installs: npm ci here (pinned lock), a venv .venv-h2 here
# (requirements-h2.txt). One line per check; ends with "N passed, M failed"; exit 0 iff
# M == 0, 2 on setup errors.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SNODO=${1:-${SNODO_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/snodo}}
NODE=${NODE:-node}
PYTHON=${PYTHON:-python3}

die() { echo "interop/transports/clients: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
[[ -x $SNODO ]] || die "no snodo binary at $SNODO (cargo build -p snodo-cli)"
command -v "$NODE" >/dev/null || die "node not found (>= 20.18.1)"
command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"

# ---- installs ---------------------------------------------------------------------
installed() { "$NODE" -e 'try { process.stdout.write(require(process.argv[1] + "/package.json").version) } catch {}' "$HERE/node_modules/$1" 2>/dev/null || true; }
if [[ $(installed undici) != 7.30.3 || $(installed @modelcontextprotocol/client) != 2.4.0 ]]; then
    echo "interop/transports/clients: npm ci (undici, @modelcontextprotocol/client)" >&2
    (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci failed"
fi
VENV=$HERE/.venv-h2
if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '1.30.0' or m.version('h2') != '4.4.1')" 2>/dev/null; then
    rm -rf "$VENV"
    echo "interop/transports/clients: installing mcp 1.30.0 and h2 into $VENV" >&2
    "$PYTHON" -m venv "$VENV" >&2 || die "python3 -m venv failed (apt-get install python3-venv)"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements-h2.txt" >&2 || die "pip install failed"
fi

# ---- certificates -------------------------------------------------------------------
DIR=$(mktemp -d /tmp/snodo-h2-clients.XXXXXX)
PID=""
stop() {
    [[ -n $PID ]] || return 0
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=""
}
trap 'stop; rm -rf "$DIR"' EXIT

(
    cd "$DIR"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=snodo interop CA" -keyout ca.key -out ca.pem \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
        -keyout server.key -out server.csr
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth" "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        "authorityKeyIdentifier=keyid" "subjectKeyIdentifier=hash" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile server.ext -out server.pem
) >"$DIR/openssl.log" 2>&1 || { cat "$DIR/openssl.log" >&2; die "openssl could not make the certificates"; }

# ---- runs ---------------------------------------------------------------------------
pass=0
fail=0
check() { # name, condition command...
    local name=$1; shift
    if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}

start() { # tls|h2c -> sets PID, URL
    local port
    port=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    local tls=()
    URL="http://127.0.0.1:$port/mcp"
    if [[ $1 == tls ]]; then
        tls=(--tls-cert "$DIR/server.pem" --tls-key "$DIR/server.key")
        URL="https://127.0.0.1:$port/mcp"
    fi
    RUST_LOG=info,snodo::http::conn=debug "$SNODO" fixture --addr "127.0.0.1:$port" "${tls[@]}" \
        >"$DIR/server.out" 2>"$DIR/server.log" &
    PID=$!
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    cat "$DIR/server.log" >&2
    die "snodo did not start"
}

# The server's log: at least one connection, each served as HTTP/2, and requests answered.
server_saw_h2() {
    local h2 other answered
    h2=$(grep -c 'serving a connection protocol="h2"' "$DIR/server.log" || true)
    other=$(grep 'serving a connection' "$DIR/server.log" | grep -vc 'protocol="h2"' || true)
    answered=$(grep -c 'snodo::request' "$DIR/server.log" || true)
    echo "#   server log: $h2 HTTP/2 connection(s), $other other, $answered requests"
    [[ $h2 -ge 1 && $other -eq 0 && $answered -ge 24 ]]
}

for client in ts python; do
    for mode in tls h2c; do
        start "$mode"
        echo "# $client over $mode -> $URL"
        ca=()
        [[ $mode == tls ]] && ca=("$DIR/ca.pem")
        if [[ $client == ts ]]; then
            out=$(timeout 120 "$NODE" "$HERE/h2_client.mjs" "$URL" "${ca[@]}" 2>&1) || true
        else
            out=$(timeout 120 "$VENV/bin/python" "$HERE/h2_client.py" "$URL" "${ca[@]}" 2>&1) || true
        fi
        stop
        echo "$out" | grep -v ' passed, ' || true
        p=$(echo "$out" | awk '/ passed, .* failed$/{print $1}' | tail -1)
        f=$(echo "$out" | awk '/ passed, .* failed$/{print $3}' | tail -1)
        if [[ -z $p ]]; then
            fail=$((fail + 1))
            echo "FAIL $client $mode: the client did not finish"
        else
            pass=$((pass + p))
            fail=$((fail + f))
        fi
        check "$client $mode: the server served every connection as HTTP/2" server_saw_h2
    done
done
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
