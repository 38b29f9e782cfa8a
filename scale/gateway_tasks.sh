#!/usr/bin/env bash
# The gateway scale-out lane's task flow (issue 33, step 5: "a task polled elsewhere"):
# three `snodo gateway` instances behind nginx round robin sharing one PostgreSQL task
# store, each with a warm stdio child of server-everything (which speaks 2025-11-25 and
# runs `simulate-research-query` as a task of its own), driven through the proxy by
# scale/gateway_tasks.py: a 2026-07-28 caller with the tasks extension creates a task
# on one instance, polls it on the others to its result, and cancels a second one
# through another instance than the one running it.
#
#   bash scale/gateway_tasks.sh
#
# A backend's task tool is a task at the front (crates/snodo-compose/src/mcp/task.rs):
# the instance that takes the call creates a front task in the shared store, runs the
# backend's task on its own child and stores the backend's status messages and result
# in the front task; any instance answers `tasks/get` and `tasks/cancel` from the
# store. The gateways log at debug for that module, so the lane reads in the running
# instance's log that the backend's task got `tasks/cancel`.
#
# PostgreSQL: the server at SNODO_TEST_PG_URL if set (.ci/run starts one), otherwise a
# throwaway cluster from scale/postgres.sh. server-everything: interop/compose's pinned
# package (`npm ci` there when missing). nginx as in scale/gateway.sh (lib.sh's
# gateway_nginx_conf; `X-Scale-Target: gwN` pins a request to gwN, the access log says
# which instance served each request). Everything listens on 127.0.0.1; every process
# started here is stopped by PID on exit; the driver is killed after
# SCALE_CLIENT_TIMEOUT s (default 60).
#
# Environment: SNODO (binary, default target/debug/snodo), NODE (default node),
# SCALE_KEEP_TMP=1 keeps the temp dir (logs).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SNODO=${SNODO:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/snodo}
NODE=${NODE:-node}
CLIENT_TIMEOUT=${SCALE_CLIENT_TIMEOUT:-60}
INSTANCES=3
NAME=gateway_tasks.sh
# shellcheck source=scale/lib.sh
. "$HERE/lib.sh"

command -v python3 >/dev/null || die "python3 is required (standard library only)"
command -v pgrep >/dev/null || install_debian procps
command -v "$NODE" >/dev/null || die "node is required (>= 20; set NODE)"
[[ -x $SNODO ]] || die "$SNODO is missing: cargo build -p snodo-cli"
find_nginx
COMPOSE=$ROOT/interop/compose
EVERYTHING=$COMPOSE/node_modules/@modelcontextprotocol/server-everything/dist/index.js
if [[ ! -f $EVERYTHING ]]; then
    note "server-everything is missing: npm ci in interop/compose"
    (cd "$COMPOSE" && timeout 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2) \
        || die "npm ci in interop/compose failed"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/snodo-gateway-tasks.XXXXXX")
chmod 755 "$TMP" # nginx workers run as an unprivileged user when started as root
MARK="scalegwt-$$"
OWN_PG=""
cleanup() {
    local rc=$? left
    trap - EXIT
    trap '' INT TERM
    stop_all
    left=$(pgrep -f -- "--lane-mark $MARK-" || true)
    if [[ -n $left ]]; then # children the gateways left behind: a failure, and stopped here
        note "children left after the gateways stopped: $(echo $left)"
        kill -KILL $left 2>/dev/null || true
        (( rc == 0 )) && rc=1
    fi
    [[ -n $OWN_PG ]] && bash "$HERE/postgres.sh" stop "$OWN_PG"
    (( rc == 0 )) || tail_logs 15 "$TMP"/*.err "$TMP"/error.log
    [[ ${SCALE_KEEP_TMP:-} == 1 ]] && note "kept $TMP" || rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -z ${SNODO_TEST_PG_URL:-} ]]; then
    OWN_PG="$TMP/pg"
    eval "$(bash "$HERE/postgres.sh" start "$OWN_PG")"
fi
PG_URL=$SNODO_TEST_PG_URL

KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
ADDRS=() GWPIDS=()
for ((n = 1; n <= INSTANCES; n++)); do
    # `--lane-mark` (which server-everything ignores) tells this lane's children apart.
    SNODO_STATE_KEY=$KEY RUST_LOG="${RUST_LOG:-info},snodo_compose::mcp::task=debug" \
        "$SNODO" --log-format json gateway --addr 127.0.0.1:0 --protocols 2026-07-28,2025-11-25 \
        --task-store "postgres:$PG_URL" --task-instance "$MARK-gw$n" \
        -- "$NODE" "$EVERYTHING" stdio --lane-mark "$MARK-gw$n" \
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
say "snodo gateway task lane: $("$SNODO" --version), server-everything over stdio, PostgreSQL task store"
say "instances: ${ADDRS[*]} behind nginx 127.0.0.1:$P"
started=$SECONDS
status=0
timeout --foreground "$CLIENT_TIMEOUT" python3 "$HERE/gateway_tasks.py" --proxy "127.0.0.1:$P" \
    --access-log "$TMP/access.log" --instances "$(joined "${ADDRS[@]}")" \
    --pids "$(joined "${GWPIDS[@]}")" --mark "$MARK" --logs "$TMP" \
    --child "$NODE" || status=$?
(( status == 124 )) && say "FAIL driver: timed out after $CLIENT_TIMEOUT s"
say "gateway task lane: $((SECONDS - started)) s of checks"
exit "$status"
