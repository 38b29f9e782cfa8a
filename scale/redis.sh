#!/usr/bin/env bash
# A throwaway Redis server on loopback for the bus tests and the scale lane (issue 35).
#
#   eval "$(bash scale/redis.sh start DIR)"   # prints: export SNODO_TEST_REDIS_URL=redis://...
#   bash scale/redis.sh stop DIR              # stops the server (by its PID) and removes DIR
#   eval "$(bash scale/redis.sh start DIR tls)"   # TLS only: export SNODO_TEST_REDIS_TLS_URL=rediss://...
#
# start: installs Debian's `redis-server` if it is missing, starts it on 127.0.0.1 on a free
# port (no unix socket, no persistence: no RDB snapshots, no AOF; protected mode on), its
# working directory, log and pid file in DIR, waits until it answers PING, writes the URL
# to DIR/url and prints the export line on stdout (everything else goes to stderr).
# With `tls`: certificates from scale/tls.sh in DIR/tls, a TLS port only (no plaintext
# port, no client certificates asked), and the URL names DIR/tls/ca.pem as sslrootcert
# (DIR/tls/other-ca.pem is a CA that signed nothing).
# stop: SIGTERM then SIGKILL, by the PID the server wrote. kill: SIGKILL (DIR stays);
# restart: starts it again on its port.
set -euo pipefail

NAME=redis.sh
STOP_SIGNALS=(TERM KILL)
KILL_SIGNAL=KILL
# shellcheck source=scale/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cmd=${1:-}
dir=${2:-}
tls=${3:-}
[[ -n $cmd && -n $dir && ( -z $tls || $tls == tls ) ]] \
    || die "usage: redis.sh start|stop|kill|restart DIR [tls]"

ping() { # $1 = port
    if [[ -d $dir/tls ]]; then
        redis-cli --tls --cacert "$dir/tls/ca.pem" -h 127.0.0.1 -p "$1" ping 2>/dev/null
    else
        redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null
    fi
}

launch() { # $1 = port: starts the server, waits until it answers PING
    local port=$1 pid i
    rm -f "$dir/redis.pid"
    local listen=(--port "$port")
    if [[ -d $dir/tls ]]; then
        listen=(--port 0 --tls-port "$port" --tls-cert-file "$dir/tls/server.pem"
            --tls-key-file "$dir/tls/server.key" --tls-ca-cert-file "$dir/tls/ca.pem"
            --tls-auth-clients no)
    fi
    # Detached from this shell (setsid): the caller's `eval "$(...)"` must not wait for it.
    setsid redis-server --bind 127.0.0.1 "${listen[@]}" --protected-mode yes \
        --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/server.log" \
        --save '' --appendonly no --daemonize no \
        </dev/null >/dev/null 2>&1 &
    for ((i = 0; i < 200; i++)); do
        [[ -s $dir/redis.pid ]] && break
        sleep 0.05
    done
    pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
    [[ -n $pid ]] || { cat "$dir/server.log" >&2 2>/dev/null || true; die "the server did not start"; }
    echo "$pid" >"$dir/pid"
    for ((i = 0; i < 200; i++)); do
        [[ $(ping "$port") == PONG ]] && break
        alive "$pid" || { cat "$dir/server.log" >&2; die "the server exited during startup"; }
        sleep 0.05
    done
    [[ $(ping "$port") == PONG ]] \
        || die "the server does not answer PING"
}

start() {
    local port
    if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
        note "redis-server not found: installing Debian's redis-server"
        install_debian redis-server redis-tools
        command -v redis-server >/dev/null || die "redis-server is still missing after apt-get install"
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [[ ! -e $dir/redis.pid ]] || die "$dir/redis.pid exists already"
    local var=SNODO_TEST_REDIS_URL url
    port=$(free_port)
    url="redis://127.0.0.1:$port"
    if [[ -n $tls ]]; then
        bash "$(dirname "${BASH_SOURCE[0]}")/tls.sh" "$dir/tls"
        var=SNODO_TEST_REDIS_TLS_URL
        url="rediss://127.0.0.1:$port/?sslrootcert=$dir/tls/ca.pem"
    fi
    launch "$port"
    echo "$url" >"$dir/url"
    note "Redis $(redis-server --version | awk '{print $3}' | sed 's/v=//') on 127.0.0.1:$port${tls:+ (TLS only)} (pid $(cat "$dir/pid"), $dir)"
    printf 'export %s=%q\n' "$var" "$url"
}

dispatch "$cmd"
