#!/usr/bin/env bash
# The bus lane (issue 35): three `snodo fixture` instances behind nginx round robin, no
# affinity, sharing a bus: first PostgreSQL, then Redis, each a throwaway server started
# by scale/postgres.sh or scale/redis.sh. scale/bus.py drives them through the proxy:
# a change published on one instance reaching listeners on all three, a 5/min rate
# limit holding at 5 across them, an initialize-era cancellation and elicitation answer
# reaching the instance that holds the request, the bus server killed and restarted
# mid-run with nothing hung and the listeners told; and, through three `snodo gateway`
# instances on the same bus (scale/bus_gateway.py), an initialize-era stdio backend's
# elicitation during a 2026-07-28 call, parked on one gateway and continued through round
# robin on another, answered.
#
#   bash scale/bus.sh            # both buses; SCALE_BUSES="redis" for one
#
# Three groups of three instances per bus: 2026-07-28 only (listen streams need it alone),
# 2025-11-25 (the initialize era), and gateways (2026-07-28 at the front, one
# `snodo fixture --stdio --protocols 2025-06-18` child each, one state key), each group
# behind its own nginx port. Every process
# started here listens on 127.0.0.1 and is stopped by PID on exit. Bounded: each bus round
# under a minute; the client is killed after SCALE_CLIENT_TIMEOUT s (default 120).
#
# Environment: SNODO (binary, default target/debug/snodo), SCALE_KEEP_TMP=1 keeps the
# temp dir (configs and logs).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SNODO=${SNODO:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/snodo}
BUSES=${SCALE_BUSES:-postgres redis}
CLIENT_TIMEOUT=${SCALE_CLIENT_TIMEOUT:-120}
NAME=bus.sh
# shellcheck source=scale/lib.sh
. "$HERE/lib.sh"

command -v python3 >/dev/null || die "python3 is required (standard library only)"
[[ -x $SNODO ]] || die "$SNODO is missing: cargo build -p snodo-cli"
NGINX=$(command -v nginx || true)
[[ -z $NGINX && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
if [[ -z $NGINX ]]; then
    note "nginx not found: installing Debian's nginx"
    install_debian nginx
    NGINX=$(command -v nginx || echo /usr/sbin/nginx)
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/snodo-bus.XXXXXX")
chmod 755 "$TMP" # nginx workers run as an unprivileged user when started as root
cleanup() {
    local rc=$?
    trap - EXIT
    trap '' INT TERM
    stop_started
    (( rc == 0 )) || tail_logs 15 "$TMP"/*/*.err "$TMP"/*/error.log
    [[ ${SCALE_KEEP_TMP:-} == 1 ]] && note "kept $TMP" || rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_instance() { # DIR NAME PROTOCOLS URL -> prints host:port once it listens
    local dir=$1 name=$2 pid
    : >"$dir/$name.out"
    RUST_LOG=${RUST_LOG:-info} "$SNODO" fixture --addr 127.0.0.1:0 --protocols "$3" \
        --bus "$4" --bus-instance "$name" --bus-lane-token lane \
        >"$dir/$name.out" 2>"$dir/$name.err" &
    pid=$!
    PIDS+=("$pid")
    wait_port "$dir/$name.out" "$pid" "instance $name"
    INSTANCE="127.0.0.1:$PORT"
}

start_gateway() { # DIR NAME URL KEY -> prints host:port once it listens
    local dir=$1 name=$2 pid
    : >"$dir/$name.out"
    SNODO_STATE_KEY=$4 RUST_LOG=${RUST_LOG:-info} "$SNODO" gateway --addr 127.0.0.1:0 \
        --protocols 2026-07-28 --bus "$3" --bus-instance "$name" \
        --backend "fx=stdio:$SNODO fixture --stdio --protocols 2025-06-18" \
        >"$dir/$name.out" 2>"$dir/$name.err" &
    pid=$!
    PIDS+=("$pid")
    wait_port "$dir/$name.out" "$pid" "gateway $name"
    INSTANCE="127.0.0.1:$PORT"
}

nginx_conf() { # DIR PORT_MODERN PORT_LEGACY PORT_GATEWAY MODERN... -- LEGACY... -- GATEWAY...
    local dir=$1 pm=$2 pl=$3 pg=$4 a
    shift 4
    cat <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log notice;
events { worker_connections 512; }
http {
    log_format lane escape=json '{"step":"\$http_x_scale_step","upstream":"\$upstream_addr","status":"\$status"}';
    access_log $dir/access.log lane;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
CONF
    printf '    upstream modern {\n'
    while [[ $1 != -- ]]; do printf '        server %s;\n' "$1"; shift; done
    shift
    printf '    }\n    upstream legacy {\n'
    while [[ $1 != -- ]]; do printf '        server %s;\n' "$1"; shift; done
    shift
    printf '    }\n    upstream gateway {\n'
    for a in "$@"; do printf '        server %s;\n' "$a"; done
    printf '    }\n'
    for a in "$pm modern" "$pl legacy" "$pg gateway"; do
        cat <<CONF
    server {
        listen 127.0.0.1:${a% *};
        keepalive_timeout 0;
        location = /mcp {
            proxy_pass http://${a#* };
            proxy_http_version 1.1;
            proxy_set_header Connection close;
            proxy_set_header Host \$host;
            proxy_buffering off;
            proxy_read_timeout 120s;
        }
    }
CONF
    done
    echo "}"
}

run_bus() { # postgres|redis
    local bus=$1 dir="$TMP/$1" url n modern=() legacy=() gateways=() names="" gnames="" pm pl pg npid i key
    mkdir -p "$dir"
    eval "$(bash "$HERE/$bus.sh" start "$dir/server")"
    SERVERS+=("$bus:$dir/server")
    url=$(cat "$dir/server/url")
    for n in 1 2 3; do start_instance "$dir" "m$n" 2026-07-28 "$url"; modern+=("$INSTANCE"); done
    for n in 1 2 3; do
        start_instance "$dir" "l$n" 2025-11-25 "$url"
        legacy+=("$INSTANCE")
        names+="${names:+,}$INSTANCE=l$n"
    done
    key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    for n in 1 2 3; do
        start_gateway "$dir" "g$n" "$url" "$key"
        gateways+=("$INSTANCE")
        gnames+="${gnames:+,}$INSTANCE=g$n"
    done
    pm=$(free_port); pl=$(free_port); pg=$(free_port)
    nginx_conf "$dir" "$pm" "$pl" "$pg" "${modern[@]}" -- "${legacy[@]}" -- "${gateways[@]}" >"$dir/nginx.conf"
    "$NGINX" -q -t -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" || die "nginx rejected $dir/nginx.conf"
    "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g 'daemon off;' \
        >"$dir/nginx.out" 2>"$dir/nginx.err" &
    npid=$!
    PIDS+=("$npid")
    for ((i = 0; i < 200; i++)); do
        (: <"/dev/tcp/127.0.0.1/$pl") 2>/dev/null && break
        alive "$npid" || die "nginx exited during startup"
        sleep 0.05
    done
    for ((i = 0; i < 200; i++)); do
        (: <"/dev/tcp/127.0.0.1/$pg") 2>/dev/null && break
        sleep 0.05
    done
    note "$bus at $url; modern ${modern[*]} behind :$pm; legacy ${legacy[*]} behind :$pl; gateways ${gateways[*]} behind :$pg"
    timeout --foreground "$CLIENT_TIMEOUT" python3 "$HERE/bus_gateway.py" --name "$bus" \
        --proxy "127.0.0.1:$pg" --access-log "$dir/access.log" --instances "$gnames" \
        || die "$bus: the gateway client failed (exit $?)"
    timeout --foreground "$CLIENT_TIMEOUT" python3 "$HERE/bus.py" --name "$bus" \
        --modern "127.0.0.1:$pm" --legacy "127.0.0.1:$pl" --access-log "$dir/access.log" --instances "$names" \
        --kill "bash '$HERE/$bus.sh' kill '$dir/server'" \
        --restart "bash '$HERE/$bus.sh' restart '$dir/server' >/dev/null" \
        || die "$bus: the client failed (exit $?)"
    for n in m1 m2 m3 l1 l2 l3; do
        grep -q 'bus down' "$dir/$n.err" || die "$bus: instance $n did not log the bus going down"
    done
    for n in m1 m2 m3; do
        [[ $(grep -c 'method="subscriptions/listen"' "$dir/$n.err") == 1 ]] \
            || die "$bus: instance $n did not hold exactly one of the 3 listeners"
    done
    note "$bus: one listener on each instance; every instance logged the outage"
    stop_all
    bash "$HERE/$bus.sh" stop "$dir/server" >/dev/null 2>&1
}

say() { printf '%s\n' "$*"; }
say "snodo bus lane: $("$SNODO" --version), $("$NGINX" -v 2>&1 | sed 's/^nginx version: //')"
started=$SECONDS
for bus in $BUSES; do run_bus "$bus"; done
say "bus lane: passed ($BUSES) in $((SECONDS - started)) s"
