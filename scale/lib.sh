# What scale/postgres.sh and scale/redis.sh share (sourced, not run): messages, a PID's
# liveness, a free loopback port, installing a Debian package, and the `stop`, `kill` and
# `restart` commands around each script's own `launch PORT` (starts the server on PORT in
# $dir, waits until it answers, writes $dir/pid) and `ready PORT`.

die() { printf '%s: %s\n' "$NAME" "$*" >&2; exit 1; }
note() { printf '%s: %s\n' "$NAME" "$*" >&2; }

alive() { [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

install_debian() { # $@ = packages
    (( EUID == 0 )) || die "$1 is missing and this user cannot install it"
    timeout 300 apt-get update -qq >&2
    timeout 600 env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "$@" >&2
}

# Signals the server by its PID ($@: signals in order, each given 5 s), until it is gone.
signal_server() {
    local pid sig i
    pid=$(cat "$dir/pid" 2>/dev/null || true)
    [[ -n $pid ]] && alive "$pid" || return 0
    for sig in "$@"; do
        kill -"$sig" "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.05; done
        alive "$pid" || return 0
    done
}

stop() {
    [[ -d $dir ]] || return 0
    signal_server "${STOP_SIGNALS[@]}"
    rm -rf "$dir"
}

# kill DIR: the server dies at once (what a crash looks like to its clients); DIR stays.
kill_server() {
    [[ -d $dir ]] || die "no server in $dir"
    signal_server "$KILL_SIGNAL" KILL
}

# restart DIR: the server killed earlier starts again on the same port.
restart() {
    local url port
    url=$(cat "$dir/url" 2>/dev/null) || die "no server in $dir"
    port=${url##*:}
    port=${port%%/*}
    signal_server "$KILL_SIGNAL" KILL
    launch "$port"
    note "restarted on 127.0.0.1:$port (pid $(cat "$dir/pid"))"
}

dispatch() { # $1 = command
    case $1 in
        start) start ;;
        stop) stop ;;
        kill) kill_server ;;
        restart) restart ;;
        *) die "unknown command $1 (start|stop|kill|restart)" ;;
    esac
}

# stop_pids PID...: SIGTERM to each, up to 12 s each to go, then SIGKILL; reaps them.
stop_pids() {
    local pid i
    for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "$@"; do
        for ((i = 0; i < 240; i++)); do alive "$pid" || break; sleep 0.05; done
        alive "$pid" && kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null || true
    done
}

# wait_port OUT PID NAME: waits (20 s) for the snodo server PID to print its loopback
# address in OUT (its stderr beside it, OUT with .err for .out); sets PORT.
wait_port() {
    local i
    PORT=""
    for ((i = 0; i < 400; i++)); do
        PORT=$(sed -n 's#.*http://127\.0\.0\.1:\([0-9][0-9]*\)/mcp.*#\1#p' "$1")
        [[ -n $PORT ]] && return 0
        alive "$2" || die "$3 exited during startup: $(tail -n 5 "${1%.out}.err")"
        sleep 0.05
    done
    die "$3 did not print its address within 20 s"
}

# What a lane started: server PIDs, and bus servers as KIND:DIR (scale/KIND.sh stop DIR).
PIDS=()
SERVERS=()

# stop_all: stops the server PIDs.
stop_all() {
    stop_pids "${PIDS[@]}"
    PIDS=()
}

# stop_started: stops them all, bus servers too (on exit).
stop_started() {
    local s
    stop_all
    for s in "${SERVERS[@]}"; do
        bash "$(dirname "${BASH_SOURCE[0]}")/${s%%:*}.sh" stop "${s#*:}" >/dev/null 2>&1 || true
    done
    SERVERS=()
}

# find_nginx: sets NGINX to Debian's nginx, installing it when missing (as root).
find_nginx() {
    NGINX=$(command -v nginx || true)
    [[ -z $NGINX && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
    if [[ -z $NGINX ]]; then
        note "nginx not found: installing Debian's nginx"
        install_debian nginx
        NGINX=$(command -v nginx || echo /usr/sbin/nginx)
    fi
    [[ -x $NGINX ]] || die "nginx is missing"
}

# start_nginx DIR PORT: runs nginx in the foreground with DIR/nginx.conf (prefix DIR),
# adds it to PIDS and waits (10 s) until it listens on 127.0.0.1:PORT.
start_nginx() {
    local dir=$1 port=$2 pid i
    "$NGINX" -q -t -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" || die "nginx rejected $dir/nginx.conf"
    "$NGINX" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" -g 'daemon off;' \
        >"$dir/nginx.out" 2>"$dir/nginx.err" &
    pid=$!
    PIDS+=("$pid")
    for ((i = 0; i < 200; i++)); do
        (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        alive "$pid" || die "nginx exited during startup: $(tail -n 5 "$dir/error.log")"
        sleep 0.05
    done
    die "nginx does not listen on 127.0.0.1:$port"
}

# tail_logs LINES FILE...: the last LINES lines of each non-empty FILE, on stderr (what a
# failed lane shows of its servers).
tail_logs() {
    local n=$1 f
    shift
    for f in "$@"; do
        [[ -s $f ]] || continue
        printf -- '--- %s (last lines) ---\n' "${f#"${TMP:-}"/}" >&2
        tail -n "$n" "$f" >&2
    done
}

# nginx_head DIR: the start of an nginx.conf whose files all live in DIR, up to and
# within `http {` (the caller adds its log format, upstreams and servers, and the `}`).
nginx_head() {
    cat <<CONF
worker_processes 1;
pid $1/nginx.pid;
error_log $1/error.log notice;
events { worker_connections 256; }
http {
    client_body_temp_path $1/client_body;
    proxy_temp_path $1/proxy;
    fastcgi_temp_path $1/fastcgi;
    uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
CONF
}

# gateway_nginx_conf DIR PORT LABEL=ADDR...: a complete nginx.conf (on stdout) for the
# gateway lanes: /mcp on 127.0.0.1:PORT proxied round robin (no affinity, keep-alive off
# on both sides, SSE unbuffered) to the instances, `X-Scale-Target: LABEL` pinning one
# request to instance LABEL, and DIR/access.log recording per request the lane's headers
# (X-Scale-Step, X-Scale-Req, X-Scale-Target) with $upstream_addr and $status.
gateway_nginx_conf() {
    local dir=$1 port=$2 a
    shift 2
    nginx_head "$dir"
    cat <<CONF
    log_format lane escape=json '{"step":"\$http_x_scale_step","req":"\$http_x_scale_req",'
        '"upstream":"\$upstream_addr","status":"\$status","target":"\$http_x_scale_target"}';
    access_log $dir/access.log lane;
    upstream rr {
        # round robin (the default), no affinity, no keepalive pool
CONF
    for a in "$@"; do printf '        server %s;\n' "${a#*=}"; done
    printf '    }\n    map $http_x_scale_target $pool {\n        default rr;\n'
    for a in "$@"; do printf '        %s %s;\n' "${a%%=*}" "${a%%=*}"; done
    printf '    }\n'
    for a in "$@"; do printf '    upstream %s { server %s; }\n' "${a%%=*}" "${a#*=}"; done
    cat <<CONF
    server {
        listen 127.0.0.1:$port;
        keepalive_timeout 0;               # one request per client connection
        location = /mcp {
            proxy_pass http://\$pool;
            proxy_http_version 1.1;
            proxy_set_header Connection close;   # no keep-alive toward the instances
            proxy_set_header Host \$host;
            proxy_buffering off;                 # stream SSE as it is produced
            proxy_read_timeout 60s;
        }
        location / { return 404; }
    }
}
CONF
}
