#!/usr/bin/env bash
# The gateway scale-out lane (issue 33, step 5): three `snodo gateway` instances behind
# nginx round robin, no affinity, one state key, each with warm stdio children of the
# same backend (the conformance fixture), driven through the proxy by scale/gateway.py:
# tools/list paged across instances, a call streaming progress, a multi-round
# input_required continued on other instances, a child killed mid-call, an instance
# SIGTERMed while the others serve. The task flow (a backend's task polled elsewhere,
# on a shared PostgreSQL task store) is its sibling lane, scale/gateway_tasks.sh.
#
#   bash scale/gateway.sh
#
# Each instance serves four backends, all `snodo fixture --profile conformance --stdio`:
# `fx` without a prefix (the flows' tools) and `b`, `c`, `d` namespaced, so that the
# front's list (132 tools) is longer than its page (100). Two keys: the gateways share
# one, the children another (their `env`). A round continued on another instance works
# because the gateway seals its backend's requestState inside its own and the backend's
# processes accept each other's states; with a key per child (the fixture's default) the
# other instance's child rejects the state (-32602), as any backend that seals its state
# per process would. Each child's command line ends in `--task-instance MARK-gwN-BACKEND`
# (an id the stdio fixture does not use), which tells the children of one instance apart
# with `pgrep -f`.
#
# nginx (Debian's; installed if missing): round robin, keep-alive off on both sides, and
# `X-Scale-Target: gwN` to send one request to instance gwN through the proxy; its access
# log records $upstream_addr per request. Everything listens on 127.0.0.1; every process
# started here is stopped by PID on exit; the driver is killed after
# SCALE_CLIENT_TIMEOUT s (default 75).
#
# Environment: SNODO (binary, default target/debug/snodo), SCALE_KEEP_TMP=1 keeps the
# temp dir (configurations and logs).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SNODO=${SNODO:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/snodo}
CLIENT_TIMEOUT=${SCALE_CLIENT_TIMEOUT:-75}
INSTANCES=3
NAME=gateway.sh
# shellcheck source=scale/lib.sh
. "$HERE/lib.sh"

command -v python3 >/dev/null || die "python3 is required (standard library only)"
command -v pgrep >/dev/null || install_debian procps
[[ -x $SNODO ]] || die "$SNODO is missing: cargo build -p snodo-cli"
find_nginx

TMP=$(mktemp -d "${TMPDIR:-/tmp}/snodo-gateway.XXXXXX")
chmod 755 "$TMP" # nginx workers run as an unprivileged user when started as root
MARK="scalegw-$$"
cleanup() {
    local rc=$? left
    trap - EXIT
    trap '' INT TERM
    stop_all
    left=$(pgrep -f -- "--task-instance $MARK-" || true)
    if [[ -n $left ]]; then # children the gateways left behind: a failure, and stopped here
        note "children left after the gateways stopped: $(echo $left)"
        kill -KILL $left 2>/dev/null || true
        (( rc == 0 )) && rc=1
    fi
    (( rc == 0 )) || tail_logs 15 "$TMP"/*.err "$TMP"/error.log
    [[ ${SCALE_KEEP_TMP:-} == 1 ]] && note "kept $TMP" || rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

config() { # N -> the instance's configuration: fx unprefixed, b c d namespaced
    local n=$1 b
    for b in fx b c d; do
        cat <<CONF
[[backend]]
name = "$b"
command = "$SNODO"
args = ["fixture", "--profile", "conformance", "--stdio", "--task-instance", "$MARK-gw$n-$b"]
env = { SNODO_STATE_KEY = "$CHILD_KEY" }
$([[ $b == fx ]] && echo 'namespace = false')
[backend.restart]
backoff_min_secs = 0.1
backoff_max_secs = 1

CONF
    done
}

key() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
KEY=$(key)       # the gateways'
CHILD_KEY=$(key) # the children's: the fixture seals its own requestState with it
ADDRS=() GWPIDS=()
for ((n = 1; n <= INSTANCES; n++)); do
    config "$n" >"$TMP/gw$n.toml"
    SNODO_STATE_KEY=$KEY RUST_LOG=${RUST_LOG:-info} "$SNODO" gateway --addr 127.0.0.1:0 \
        --protocols 2026-07-28,2025-11-25,2025-06-18 --config "$TMP/gw$n.toml" \
        >"$TMP/gw$n.out" 2>"$TMP/gw$n.err" &
    PIDS+=("$!")
    GWPIDS+=("gw$n=$!")
done
for ((n = 1; n <= INSTANCES; n++)); do
    wait_port "$TMP/gw$n.out" "${GWPIDS[$((n - 1))]#*=}" "gateway gw$n"
    ADDRS+=("gw$n=127.0.0.1:$PORT")
done

P=$(free_port)
gateway_nginx_conf "$TMP" "$P" "${ADDRS[@]}" >"$TMP/nginx.conf"
start_nginx "$TMP" "$P"

joined() { local IFS=,; echo "$*"; }
say() { printf '%s\n' "$*"; }
say "snodo gateway lane: $("$SNODO" --version), $("$NGINX" -v 2>&1 | sed 's/^nginx version: //')"
say "instances: ${ADDRS[*]} behind nginx 127.0.0.1:$P"
started=$SECONDS
status=0
timeout --foreground "$CLIENT_TIMEOUT" python3 "$HERE/gateway.py" --proxy "127.0.0.1:$P" \
    --access-log "$TMP/access.log" --instances "$(joined "${ADDRS[@]}")" \
    --pids "$(joined "${GWPIDS[@]}")" --mark "$MARK" || status=$?
(( status == 124 )) && say "FAIL driver: timed out after $CLIENT_TIMEOUT s"
say "gateway lane: $((SECONDS - started)) s of checks"
exit "$status"
