#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback for the tests and the scale lane (issue 18).
#
#   eval "$(bash scale/postgres.sh start DIR)"   # prints: export SNODO_TEST_PG_URL=postgres://...
#   bash scale/postgres.sh stop DIR              # stops the server (by its PID) and removes DIR
#   eval "$(bash scale/postgres.sh start DIR tls)"   # TLS only: export SNODO_TEST_PG_TLS_URL=...
#
# start: installs Debian's `postgresql` if initdb is missing, runs initdb in DIR/data (trust
# authentication, superuser `snodo`), starts the server on 127.0.0.1 on a free port with its
# unix socket in DIR (no system socket dir, no system service), waits until it accepts
# connections, creates the database `snodo`, writes the URL to DIR/url and prints the export
# line on stdout (everything else goes to stderr). PostgreSQL refuses to run as root: as root
# initdb and the server run as the `postgres` user (created by the package), DIR is chowned.
# With `tls`: certificates from scale/tls.sh in DIR/tls, ssl=on, and pg_hba.conf accepts
# TCP connections over TLS only (`hostssl`); the URL says sslmode=verify-full and names
# DIR/tls/ca.pem as sslrootcert (DIR/tls/other-ca.pem is a CA that signed nothing).
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
tls=${3:-}
[[ -n $cmd && -n $dir && ( -z $tls || $tls == tls ) ]] \
    || die "usage: postgres.sh start|stop|kill|restart DIR [tls]"

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
    local ssl=()
    if [[ -d $dir/tls ]]; then
        ssl=(-c ssl=on -c "ssl_cert_file=$dir/tls/server.pem" -c "ssl_key_file=$dir/tls/server.key")
    fi
    # Detached from this shell (setsid): the caller's `eval "$(...)"` must not wait for it.
    as_owner setsid "$bin/postgres" -D "$dir/data" -h 127.0.0.1 -p "$port" -k "$dir" \
        -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
        -c max_connections=200 -c shared_buffers=32MB "${ssl[@]}" \
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
    local var=SNODO_TEST_PG_URL url query=""
    if [[ -n $tls ]]; then
        bash "$(dirname "${BASH_SOURCE[0]}")/tls.sh" "$dir/tls"
        (( EUID != 0 )) || chown -R postgres: "$dir/tls"
        # Local (socket) connections as before; TCP over TLS only.
        printf '%s\n' 'local all all trust' 'hostssl all all 127.0.0.1/32 trust' \
            'hostssl all all ::1/128 trust' >"$dir/data/pg_hba.conf"
        var=SNODO_TEST_PG_TLS_URL
        query="?sslmode=verify-full&sslrootcert=$dir/tls/ca.pem"
    fi
    port=$(free_port)
    launch "$port"
    psql -q -h 127.0.0.1 -p "$port" -U snodo -d postgres -c 'CREATE DATABASE snodo' >&2 \
        || die "CREATE DATABASE failed"
    url="postgres://snodo@127.0.0.1:$port/snodo$query"
    echo "$url" >"$dir/url"
    note "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port${tls:+ (TLS only)} (pid $(cat "$dir/pid"), $dir)"
    printf 'export %s=%q\n' "$var" "$url"
}

dispatch "$cmd"
