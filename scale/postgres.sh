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
set -euo pipefail

die() { printf 'postgres.sh: %s\n' "$*" >&2; exit 1; }
note() { printf 'postgres.sh: %s\n' "$*" >&2; }

cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || die "usage: postgres.sh start|stop DIR"

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

alive() { [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }

start() {
    local bin port pid i
    if ! bin=$(find_bin); then
        note "initdb not found: installing Debian's postgresql"
        (( EUID == 0 )) || die "postgresql is missing and this user cannot install it"
        timeout 300 apt-get update -qq >&2
        timeout 600 env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends postgresql >&2
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
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # Detached from this shell (setsid): the caller's `eval "$(...)"` must not wait for it.
    as_owner setsid "$bin/postgres" -D "$dir/data" -h 127.0.0.1 -p "$port" -k "$dir" \
        -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
        -c max_connections=200 -c shared_buffers=32MB \
        </dev/null >"$dir/server.log" 2>&1 &
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
    psql -q -h 127.0.0.1 -p "$port" -U snodo -d postgres -c 'CREATE DATABASE snodo' >&2 \
        || die "CREATE DATABASE failed"
    local url="postgres://snodo@127.0.0.1:$port/snodo"
    echo "$url" >"$dir/url"
    note "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (pid $pid, $dir)"
    printf 'export SNODO_TEST_PG_URL=%q\n' "$url"
}

stop() {
    local pid sig i
    [[ -d $dir ]] || return 0
    pid=$(cat "$dir/pid" 2>/dev/null || true)
    if [[ -n $pid ]] && alive "$pid"; then
        for sig in TERM INT KILL; do
            kill -"$sig" "$pid" 2>/dev/null || true
            for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.05; done
            alive "$pid" || break
        done
    fi
    rm -rf "$dir"
}

case $cmd in
    start) start ;;
    stop) stop ;;
    *) die "unknown command $cmd (start|stop)" ;;
esac
