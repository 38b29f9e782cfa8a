#!/usr/bin/env bash
# nginx proxying HTTP/1.1 clients to a snodo instance on a Unix socket (issue 36).
#
#   bash interop/transports/nginx.sh [SNODO_BINARY]
#
# Starts `snodo fixture --profile echo --addr unix:DIR/mcp.sock` and nginx (Debian
# `nginx-light`, its own config and prefix in DIR, listening on 127.0.0.1 on a free port,
# no system service) with `proxy_pass http://unix:DIR/mcp.sock:/mcp`; then curl over
# HTTP/1.1 and `snodo client` through nginx (tools/list, tools/call, an SSE answer);
# stops both by PID and removes DIR. Exit 0 when every check passed; prints
# `N passed, N failed`.
set -euo pipefail

SNODO=${1:-target/debug/snodo}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
[[ -x $SNODO ]] || { echo "nginx.sh: no snodo binary at $SNODO (cargo build -p snodo-cli)" >&2; exit 2; }
[[ -x $NGINX ]] || { echo "nginx.sh: nginx not found (apt-get install nginx-light)" >&2; exit 2; }

DIR=$(mktemp -d /tmp/snodo-nginx.XXXXXX)
SNODO_PID=""
NGINX_PID=""
cleanup() {
    [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
    [[ -n $SNODO_PID ]] && kill "$SNODO_PID" 2>/dev/null && wait "$SNODO_PID" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT

SOCK=$DIR/mcp.sock
"$SNODO" fixture --profile echo --addr "unix:$SOCK" --socket-mode 666 >"$DIR/snodo.out" 2>"$DIR/snodo.err" &
SNODO_PID=$!
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.05; done
[[ -S $SOCK ]] || { cat "$DIR/snodo.err" >&2; echo "nginx.sh: snodo did not start" >&2; exit 1; }

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$DIR/logs"
cat >"$DIR/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/logs/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $DIR/body;
    proxy_temp_path $DIR/proxy;
    fastcgi_temp_path $DIR/fastcgi;
    uwsgi_temp_path $DIR/uwsgi;
    scgi_temp_path $DIR/scgi;
    upstream snodo { server unix:$SOCK; keepalive 8; }
    server {
        listen 127.0.0.1:$PORT;
        location /mcp {
            proxy_pass http://snodo;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            # The client's Host, checked by snodo against its allow-list.
            proxy_set_header Host \$http_host;
            # SSE answers stream through.
            proxy_buffering off;
        }
    }
}
CONF
"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" &
NGINX_PID=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.05; done

pass=0; fail=0
check() { # name, command...
    local name=$1; shift
    if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
post() { # method, params (without _meta), extra headers...
    local method=$1 params=$2; shift 2
    curl -sS --http1.1 --max-time 10 "http://127.0.0.1:$PORT/mcp" \
        -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $method" "$@" \
        -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$method\",\"params\":{$params$META}}"
}
list_ok() { post tools/list '' | grep -q '"name":"echo"'; }
call_ok() { post tools/call '"name":"echo","arguments":{"text":"via-nginx"},' -H 'Mcp-Name: echo' | grep -q 'via-nginx'; }
client_ok() { "$SNODO" client --url "http://127.0.0.1:$PORT/mcp" call echo text=client | grep -q '"text": "client"'; }
direct_ok() { "$SNODO" client --unix-socket "$SOCK" --url http://localhost/mcp call echo text=direct | grep -q '"text": "direct"'; }
check "curl HTTP/1.1 -> nginx -> unix socket: tools/list" list_ok
check "curl HTTP/1.1 -> nginx -> unix socket: tools/call" call_ok
check "snodo client -> nginx -> unix socket" client_ok
check "snodo client --unix-socket (no proxy)" direct_ok
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
