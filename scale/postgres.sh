#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback for the tests and the scale lane (issue 18).
#
#   eval "$(bash scale/postgres.sh start DIR)"   # prints: export SNODO_TEST_PG_URL=postgres://...
#   bash scale/postgres.sh stop DIR              # stops the server (by its PID) and removes DIR
#
# start: installs Debian's `postgresql` if initdb is missing, runs initdb in DIR/data (trust
# authentication, superuser `snodo`), starts the server on 127.0.0.1 on a free port with its
# unix socket in DIR (no system socket dir, no system service), waits until it accepts
# connections, creates the database `snodo`, writes the URL to DIR/url and prints the export
# line on stdout (everything else goes to stderr). PostgreSQL refuses to run as root: as root
# initdb and the server run as the `postgres` user (created by the package), DIR is chowned.
# stop: SIGTERM (smart shutdown) then SIGINT (fast) then SIGKILL, by the postmaster's PID.
# kill: SIGQUIT (immediate shutdown, like a crash); restart: starts it again on its port.
set -euo pipefail

NAME=postgres.sh
STOP_SIGNALS=(TERM INT KILL)
KILL_SIGNAL=QUIT
# shellcheck source=scale/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || die "usage: postgres.sh start|stop|kill|restart DIR"

find_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [[ -x $d/initdb ]] && { echo "$d"; return 0; }
    done
    return 1
}

as_owner() { # run a command as the cluster's owner
    if (( EUID == 0 )); then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

launch() { # $1 = port: starts the cluster in $dir/data, waits until it accepts connections
    local bin port=$1 pid i
    bin=$(find_bin) || die "initdb not found"
    rm -f "$dir/data/postmaster.pid"
    # Detached from this shell (setsid): the caller's `eval "$(...)"` must not wait for it.
    as_owner setsid "$bin/postgres" -D "$dir/data" -h 127.0.0.1 -p "$port" -k "$dir" \
        -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
        -c max_connections=200 -c shared_buffers=32MB \
        </dev/null >>"$dir/server.log" 2>&1 &
    for ((i = 0; i < 300; i++)); do
        [[ -s $dir/data/postmaster.pid ]] && break
        sleep 0.05
    done
    pid=$(head -n1 "$dir/data/postmaster.pid" 2>/dev/null || true)
    [[ -n $pid ]] || { cat "$dir/server.log" >&2; die "the server did not start"; }
    echo "$pid" >"$dir/pid"
    for ((i = 0; i < 300; i++)); do
        if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then break; fi
        alive "$pid" || { cat "$dir/server.log" >&2; die "the server exited during startup"; }
        sleep 0.05
    done
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" || die "the server does not accept connections"
}

start() {
    local bin port
    if ! bin=$(find_bin); then
        note "initdb not found: installing Debian's postgresql"
        install_debian postgresql
        bin=$(find_bin) || die "initdb is still missing after apt-get install"
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [[ ! -e $dir/data ]] || die "$dir/data exists already"
    if (( EUID == 0 )); then
        id postgres >/dev/null 2>&1 || die "no postgres user (the package creates it)"
        chown postgres: "$dir"
        chmod 700 "$dir"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -U snodo --auth=trust -E UTF8 --no-instructions \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    port=$(free_port)
    launch "$port"
    psql -q -h 127.0.0.1 -p "$port" -U snodo -d postgres -c 'CREATE DATABASE snodo' >&2 \
        || die "CREATE DATABASE failed"
    local url="postgres://snodo@127.0.0.1:$port/snodo"
    echo "$url" >"$dir/url"
    note "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (pid $(cat "$dir/pid"), $dir)"
    printf 'export SNODO_TEST_PG_URL=%q\n' "$url"
}

dispatch "$cmd"
