#!/usr/bin/env bash
# Scale-out test (issue 9): N identical `snodo fixture` instances behind nginx with
# round-robin and no affinity, exercised through the proxy by scale/client.py.
#
#   bash scale/run.sh
#
# Starts, all on 127.0.0.1:
#   - 3 instances s1..s3 sharing one SNODO_STATE_KEY, behind proxy port P1;
#   - 3 instances u1..u3 each with its own random key, behind proxy port P2
#     (the negative control: a multi-round flow there must fail);
#   - one nginx (Debian's package; installed if missing) running in the foreground with a
#     config generated in a temp dir, keep-alive off on both sides so consecutive requests
#     land on different instances, and an access log that records $upstream_addr per
#     request next to the X-Scale-Step / X-Scale-Req headers the client sends.
# Every process started here is stopped on exit. Each phase is bounded in time.
#
# Environment: SNODO (binary, default target/debug/snodo), SCALE_INSTANCES (default 3),
# SCALE_PAGE_SIZE (default 2), SCALE_CLIENT_TIMEOUT (seconds, default 240),
# SCALE_KEEP_TMP=1 keeps the temp dir (configs and logs).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SNODO=${SNODO:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/snodo}
INSTANCES=${SCALE_INSTANCES:-3}
PAGE_SIZE=${SCALE_PAGE_SIZE:-2}
CLIENT_TIMEOUT=${SCALE_CLIENT_TIMEOUT:-240}
PROTOCOLS=2026-07-28,2025-11-25,2025-06-18

say() { printf '%s\n' "$*"; }
die() { printf 'scale: %s\n' "$*" >&2; exit 1; }

# --- prerequisites --------------------------------------------------------------------

command -v python3 >/dev/null || die "python3 is required (standard library only)"
command -v timeout >/dev/null || die "timeout (coreutils) is required"
if [[ ! -x $SNODO ]]; then
    say "building snodo-cli ($SNODO is missing)"
    (cd "$ROOT" && timeout 1800 cargo build -q -p snodo-cli)
fi

NGINX=$(command -v nginx || true)
[[ -z $NGINX && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
if [[ -z $NGINX ]]; then
    say "nginx not found: installing it from the distribution's packages"
    SUDO=()
    if (( EUID != 0 )); then
        command -v sudo >/dev/null || die "nginx is missing and this user cannot install it (no root, no sudo)"
        SUDO=(sudo)
    fi
    timeout 300 "${SUDO[@]}" apt-get update -qq
    timeout 600 "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends nginx >/dev/null
    NGINX=$(command -v nginx || echo /usr/sbin/nginx)
    [[ -x $NGINX ]] || die "nginx is still missing after apt-get install"
fi

# --- processes and cleanup ------------------------------------------------------------

TMP=$(mktemp -d "${TMPDIR:-/tmp}/snodo-scale.XXXXXX")
chmod 755 "$TMP" # nginx workers run as an unprivileged user when started as root
PIDS=()

alive() { # $1 = pid: running and not a zombie
    local rest
    [[ -r /proc/$1/stat ]] || return 1
    rest=$(<"/proc/$1/stat") || return 1
    rest=${rest##*) }
    [[ ${rest%% *} != Z ]]
}

cleanup() {
    local rc=$? pid deadline
    trap - EXIT
    trap '' INT TERM # finish cleaning up even if signalled again
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    deadline=$((SECONDS + 12)) # snodo drains in-flight requests for up to 10 s
    for pid in "${PIDS[@]}"; do
        while alive "$pid" && (( SECONDS < deadline )); do sleep 0.1; done
        if alive "$pid"; then
            say "scale: pid $pid ignored SIGTERM; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
    if (( rc != 0 )); then
        for f in "$TMP"/*.err "$TMP"/error.log; do
            [[ -s $f ]] || continue
            printf -- '--- %s (last lines) ---\n' "${f##*/}" >&2
            tail -n 15 "$f" >&2
        done
    fi
    if [[ ${SCALE_KEEP_TMP:-} == 1 ]]; then
        say "scale: kept $TMP" >&2
    else
        rm -rf "$TMP"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- snodo instances ------------------------------------------------------------------

help=$("$SNODO" fixture --help)
PAGE_ARGS=()
if [[ $help == *--page-size* ]]; then
    PAGE_ARGS=(--page-size "$PAGE_SIZE")
else
    say "note: \`snodo fixture\` has no --page-size flag; the pages-across-instances step will fail"
    PAGE_SIZE=0
fi

# start_instance NAME KEY|'' -> prints host:port once it listens
start_instance() {
    local name=$1 key=$2 port="" i
    if [[ -n $key ]]; then
        SNODO_STATE_KEY=$key "$SNODO" fixture --addr 127.0.0.1:0 --protocols "$PROTOCOLS" \
            "${PAGE_ARGS[@]}" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    else
        env -u SNODO_STATE_KEY "$SNODO" fixture --addr 127.0.0.1:0 --protocols "$PROTOCOLS" \
            "${PAGE_ARGS[@]}" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    fi
    PIDS+=($!)
    echo "$!" >"$TMP/$name.pid"
}

wait_instance() { # NAME -> host:port on stdout
    local name=$1 pid port="" i
    pid=$(<"$TMP/$name.pid")
    for ((i = 0; i < 200; i++)); do
        port=$(sed -n 's#.*http://127\.0\.0\.1:\([0-9][0-9]*\)/mcp.*#\1#p' "$TMP/$name.out")
        [[ -n $port ]] && break
        alive "$pid" || { cat "$TMP/$name.err" >&2; die "instance $name exited during startup"; }
        sleep 0.05
    done
    [[ -n $port ]] || die "instance $name did not print its address within 10 s"
    echo "127.0.0.1:$port"
}

KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
SHARED=() UNSHARED=()
for ((n = 1; n <= INSTANCES; n++)); do start_instance "s$n" "$KEY"; done
for ((n = 1; n <= INSTANCES; n++)); do start_instance "u$n" ""; done
for ((n = 1; n <= INSTANCES; n++)); do SHARED+=("$(wait_instance "s$n")"); done
for ((n = 1; n <= INSTANCES; n++)); do UNSHARED+=("$(wait_instance "u$n")"); done

# --- nginx ----------------------------------------------------------------------------

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
P1=$(free_port)
P2=$(free_port)
while [[ $P2 == "$P1" ]]; do P2=$(free_port); done

upstream_block() { # NAME ADDR...
    local name=$1 a
    shift
    printf '    upstream %s {\n' "$name"
    printf '        # round-robin (the default), no ip_hash/hash/sticky, no keepalive pool\n'
    for a in "$@"; do printf '        server %s;\n' "$a"; done
    printf '    }\n'
}

server_block() { # PORT UPSTREAM
    cat <<EOF
    server {
        listen 127.0.0.1:$1;
        server_name 127.0.0.1 localhost;
        keepalive_timeout 0;               # one request per client connection
        access_log $TMP/access.log scale;

        location = /mcp {
            proxy_pass http://$2;
            proxy_http_version 1.1;
            proxy_set_header Connection close;   # no keep-alive toward the instances
            proxy_set_header Host \$host;        # a loopback name the instances accept
            proxy_buffering off;                 # stream SSE as it is produced
            proxy_read_timeout 60s;              # instances send SSE keep-alives every 15 s
            client_max_body_size 4m;             # the instances' own body limit
        }
        location = /healthz {
            proxy_pass http://$2;
            proxy_http_version 1.1;
            proxy_set_header Connection close;
            proxy_set_header Host \$host;
        }
        location / { return 404; }
    }
EOF
}

{
    cat <<EOF
# generated by scale/run.sh
worker_processes 1;
pid $TMP/nginx.pid;
error_log $TMP/error.log notice;
events { worker_connections 256; }
http {
    log_format scale escape=json '{"step":"\$http_x_scale_step","req":"\$http_x_scale_req",'
        '"upstream":"\$upstream_addr","upstream_status":"\$upstream_status","status":"\$status",'
        '"port":"\$server_port","method":"\$request_method","uri":"\$request_uri","time":"\$request_time"}';
    client_body_temp_path $TMP/client_body;
    proxy_temp_path $TMP/proxy;
    fastcgi_temp_path $TMP/fastcgi;
    uwsgi_temp_path $TMP/uwsgi;
    scgi_temp_path $TMP/scgi;
EOF
    upstream_block snodo_shared "${SHARED[@]}"
    upstream_block snodo_unshared "${UNSHARED[@]}"
    server_block "$P1" snodo_shared
    server_block "$P2" snodo_unshared
    echo "}"
} >"$TMP/nginx.conf"

"$NGINX" -q -t -p "$TMP" -e "$TMP/error.log" -c "$TMP/nginx.conf" \
    || die "nginx rejected the generated config ($TMP/nginx.conf)"
"$NGINX" -p "$TMP" -e "$TMP/error.log" -c "$TMP/nginx.conf" -g 'daemon off;' \
    >"$TMP/nginx.out" 2>"$TMP/nginx.err" &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
for port in "$P1" "$P2"; do
    for ((i = 0; i < 200; i++)); do
        (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        alive "$NGINX_PID" || die "nginx exited during startup"
        sleep 0.05
    done
    (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null || die "nginx does not listen on 127.0.0.1:$port"
done

labels() { # PREFIX ADDR... -> p1=addr,p2=addr
    local prefix=$1 out="" n=0 a
    shift
    for a in "$@"; do n=$((n + 1)); out+="${out:+,}$prefix$n=$a"; done
    echo "$out"
}

say "snodo scale-out test: $("$SNODO" --version), $("$NGINX" -v 2>&1 | sed 's/^nginx version: //')"
say "shared key:   $(labels s "${SHARED[@]}" | tr , ' ') behind nginx 127.0.0.1:$P1"
say "own keys:     $(labels u "${UNSHARED[@]}" | tr , ' ') behind nginx 127.0.0.1:$P2 (negative control)"
say "page size:    $([[ $PAGE_SIZE != 0 ]] && echo "$PAGE_SIZE (--page-size)" || echo "default (no --page-size flag)")"

# --- the client -----------------------------------------------------------------------

status=0
timeout --foreground "$CLIENT_TIMEOUT" python3 "$HERE/client.py" \
    --proxy "127.0.0.1:$P1" --unshared-proxy "127.0.0.1:$P2" \
    --access-log "$TMP/access.log" \
    --instances "$(labels s "${SHARED[@]}")" --unshared-instances "$(labels u "${UNSHARED[@]}")" \
    --page-size "$PAGE_SIZE" \
    --drain-pid "$(<"$TMP/s$INSTANCES.pid")" --drain-addr "${SHARED[$((INSTANCES - 1))]}" \
    || status=$?
if (( status == 124 )); then
    say "FAIL client: timed out after ${CLIENT_TIMEOUT} s"
fi
exit "$status"
