#!/usr/bin/env bash
# A throwaway Redis server on loopback for the bus tests and the scale lane (issue 35).
#
#   eval "$(bash scale/redis.sh start DIR)"   # prints: export SNODO_TEST_REDIS_URL=redis://...
#   bash scale/redis.sh stop DIR              # stops the server (by its PID) and removes DIR
#
# start: installs Debian's `redis-server` if it is missing, starts it on 127.0.0.1 on a free
# port (no unix socket, no persistence: no RDB snapshots, no AOF; protected mode on), its
# working directory, log and pid file in DIR, waits until it answers PING, writes the URL
# to DIR/url and prints the export line on stdout (everything else goes to stderr).
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
[[ -n $cmd && -n $dir ]] || die "usage: redis.sh start|stop|kill|restart DIR"

launch() { # $1 = port: starts the server, waits until it answers PING
    local port=$1 pid i
    rm -f "$dir/redis.pid"
    # Detached from this shell (setsid): the caller's `eval "$(...)"` must not wait for it.
    setsid redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes \
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
        [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]] && break
        alive "$pid" || { cat "$dir/server.log" >&2; die "the server exited during startup"; }
        sleep 0.05
    done
    [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]] \
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
    port=$(free_port)
    launch "$port"
    local url="redis://127.0.0.1:$port"
    echo "$url" >"$dir/url"
    note "Redis $(redis-server --version | awk '{print $3}' | sed 's/v=//') on 127.0.0.1:$port (pid $(cat "$dir/pid"), $dir)"
    printf 'export SNODO_TEST_REDIS_URL=%q\n' "$url"
}

dispatch "$cmd"
