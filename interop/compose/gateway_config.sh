#!/usr/bin/env bash
# `snodo gateway --config FILE` (issue 33) against servers nobody here wrote, driven by
# the official TypeScript clients (drive.mjs: @modelcontextprotocol/client 2.4.0 for
# 2026-07-28, @modelcontextprotocol/sdk 1.32.2 for the initialize era):
#   ev   @modelcontextprotocol/server-everything 2026.8.31 over stdio, configured with an
#        environment (checked through its get-env tool), a working directory (checked
#        in crates/snodo-cli/tests/gateway_config.rs: PWD is inherited), a deny list, a
#        rename, a description override and a per-tool policy
#   web  the same server over Streamable HTTP, namespace "web", an allow list, an
#        upstream bearer token read from an environment variable
# Checks: what the clients list (renamed, filtered), call/read/prompt/progress/cancel
# through both backends on every revision, /healthz (200, then 503 while the HTTP
# backend is killed, 200 once it is back), the backend label in /metrics, no child left
# after SIGTERM; then three instances of the same configuration behind nginx with
# deploy/gateway-nginx.conf (ports and paths replaced), driven on every revision. One
# line per check, ends with "N passed, M failed"; exit 0 iff M == 0,
# 2 on setup errors. Every process listens on 127.0.0.1 and is stopped by PID.
#
# Needs `npm ci` in interop/compose (run.sh does it) and the snodo binary
# (SNODO_BIN, default <target>/debug/snodo; built here when missing). NODE: node >= 20.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
SNODO_BIN="${SNODO_BIN:-$TARGET/debug/snodo}"
NODE="${NODE:-node}"
VERSIONS=(2026-07-28 2025-11-25 2025-06-18 2025-03-26)

die() { echo "interop/compose/gateway_config: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE, >= 20)"
command -v curl >/dev/null 2>&1 || die "curl not found"
EVERYTHING="$HERE/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EVERYTHING" ] && [ -d "$HERE/node_modules/@modelcontextprotocol/client" ] ||
    die "node_modules missing: cd interop/compose && npm ci"
[ -x "$SNODO_BIN" ] || (cd "$REPO" && cargo build -q -p snodo-cli >&2) || die "building snodo failed"

# ---- processes ---------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/snodo-gateway-config.XXXXXX")"
# shellcheck source=interop/compose/lib.sh
source "$HERE/lib.sh"
cleanup() {
    for n in gateway "${!PIDS[@]}"; do stop "$n"; done
    rm -rf "$WORK"
}
trap cleanup EXIT

EVH_PORT=$(free_port)
GW_PORT=$(free_port)
METRICS_PORT=$(free_port)
start_evh() { start evh "$EVH_PORT" env PORT="$EVH_PORT" "$NODE" --require "$HERE/loopback.cjs" "$EVERYTHING" streamableHttp; }
start_evh
mkdir -p "$WORK/ev-home"
cat >"$WORK/gateway.toml" <<TOML
[gateway]
ready_timeout_secs = 30

[[backend]]
name = "ev"
command = "$NODE"
args = ["$EVERYTHING", "stdio"]
env = { GW_MARK = "from-the-gateway-config" }
cwd = "$WORK/ev-home"
deny = ["toggle-*", "gzip-file-as-resource"]
rename = { "get-sum" = "add" }
describe = { echo = "Echo, through the configured gateway" }

[[backend.policy]]
tools = "trigger-*"
timeout_secs = 60
max_concurrent = 4

[[backend]]
name = "evh"
url = "http://127.0.0.1:$EVH_PORT/mcp"
namespace = "web"
bearer_env = "GW_UPSTREAM_TOKEN"
allow = ["echo", "trigger-*", "args-prompt", "demo://*"]
restart = { backoff_min_secs = 0.2, backoff_max_secs = 1, check_interval_secs = 1 }
TOML
start gateway "$GW_PORT" env GW_UPSTREAM_TOKEN=upstream-secret RUST_LOG="${RUST_LOG:-info}" \
    "$SNODO_BIN" --metrics-addr "127.0.0.1:$METRICS_PORT" \
    gateway --addr "127.0.0.1:$GW_PORT" --config "$WORK/gateway.toml"
URL="http://127.0.0.1:$GW_PORT/mcp"

# ---- checks ------------------------------------------------------------------------
PASS=0
FAIL=0
check() { # check NAME CMD...: one line for a shell condition
    if "${@:2}"; then echo "ok   gateway-config: $1"; PASS=$((PASS + 1)); else echo "FAIL gateway-config: $1"; FAIL=$((FAIL + 1)); fi
}
# The official v2 client: `tools` lists "name|description" lines; `call TOOL JSON` prints
# the text of the result.
client() { (cd "$HERE" && "$NODE" --input-type=module -e '
    const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
    const c = new Client({ name: "gw-config", version: "1" }, { capabilities: {}, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await c.connect(new StreamableHTTPClientTransport(new URL(process.argv[1])));
    if (process.argv[2] === "tools") {
        const { tools } = await c.listTools();
        console.log(tools.map(t => `${t.name}|${t.description ?? ""}`).join("\n"));
    } else {
        const r = await c.callTool({ name: process.argv[3], arguments: JSON.parse(process.argv[4]) });
        console.log((r.content ?? []).map(x => x.text ?? "").join(""));
    }
    await c.close();
' "$URL" "$@" 2>&1) || true; }
TOOLS="$(client tools)"
listed() { grep -q "^$1|" <<<"$TOOLS"; }
unlisted() { ! listed "$1"; }
check "ev_echo listed with the configured description" grep -qx 'ev_echo|Echo, through the configured gateway' <<<"$TOOLS"
check "get-sum served as add (renamed, no namespace)" listed add
check "ev_get-sum not listed (renamed)" unlisted ev_get-sum
check "ev_toggle-simulated-logging denied" unlisted ev_toggle-simulated-logging
check "ev_gzip-file-as-resource denied" unlisted ev_gzip-file-as-resource
check "web_echo allowed" listed web_echo
check "web_get-env not allowed" unlisted web_get-env
SUM="$(client call add '{"a": 2, "b": 3}')"
check "add(2, 3) answers 5 ($SUM)" grep -qE '(^|[^0-9])5([^0-9]|$)' <<<"$SUM"
ENV_OUT="$(client call ev_get-env '{}')"
check "the child runs with the configured environment" grep -q from-the-gateway-config <<<"$ENV_OUT"
for v in "${VERSIONS[@]}"; do
    for ns in ev web; do
        tally "$(cd "$HERE" && "$NODE" drive.mjs "$URL" "$v" "$ns" everything \
            call read prompt progress cancel 2>&1 | sed 's/^\(ok  *\|FAIL  *\)/&gateway-config: /' || true)"
    done
done

health() { curl -s -o "$WORK/health.json" -w '%{http_code}' "http://127.0.0.1:$GW_PORT/healthz" || true; }
health_is() { [ "$(health)" = "$1" ]; }
# state_is NAME STATE: the last /healthz answer reports backend NAME in STATE.
state_is() {
    "$NODE" -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        process.exit(r.backends.some(b => b.name === process.argv[2] && b.state === process.argv[3]) ? 0 : 1)' \
        "$WORK/health.json" "$1" "$2"
}
check "/healthz 200 with both backends up" health_is 200
check "/healthz reports ev up" state_is ev up
check "/healthz reports evh up" state_is evh up
METRICS="$(curl -s "http://127.0.0.1:$METRICS_PORT/metrics" || true)"
check "/metrics counts calls per backend" grep -q 'snodo_backend_requests_total{backend="ev",method="tools/call",outcome="ok"}' <<<"$METRICS"
check "/metrics says evh is up" grep -qx 'snodo_backend_up{backend="evh"} 1' <<<"$METRICS"
check "the request log names the backend" grep -q 'snodo::backend: backend request backend="evh"' "$WORK/gateway.log"

stop evh
check "evh killed: /healthz 503" eventually 20 health_is 503
check "evh killed: reported restarting" state_is evh restarting
start_evh
check "evh back: /healthz 200" eventually 30 health_is 200
tally "$(cd "$HERE" && "$NODE" drive.mjs "$URL" 2025-06-18 web everything call 2>&1 |
    sed 's/^\(ok  *\|FAIL  *\)/&gateway-config: after restart: /' || true)"

# ---- deploy/gateway-nginx.conf: three instances behind nginx, round robin ---------------
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
if [ -x "$NGINX" ]; then
    chmod 755 "$WORK" # nginx workers run as an unprivileged user when started as root
    KEY="$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
    NGINX_PORT=$(free_port)
    CONF="$(cat "$REPO/deploy/gateway-nginx.conf")"
    CONF="${CONF//127.0.0.1:8080/127.0.0.1:$NGINX_PORT}"
    CONF="${CONF//\/run\/nginx-mcp-gateway.pid/$WORK/nginx.pid}"
    CONF="${CONF//\/var\/log\/nginx\//$WORK/}"
    for i in 1 2 3; do
        port=$(free_port)
        CONF="${CONF//127.0.0.1:808$i/127.0.0.1:$port}"
        start "gw$i" "$port" env SNODO_STATE_KEY="$KEY" GW_UPSTREAM_TOKEN=upstream-secret \
            "$SNODO_BIN" gateway --addr "127.0.0.1:$port" --config "$WORK/gateway.toml"
    done
    printf '%s\n' "$CONF" >"$WORK/nginx.conf"
    "$NGINX" -q -t -p "$WORK" -e "$WORK/nginx-error.log" -c "$WORK/nginx.conf" >&2 ||
        die "nginx rejected deploy/gateway-nginx.conf"
    "$NGINX" -p "$WORK" -e "$WORK/nginx-error.log" -c "$WORK/nginx.conf" -g 'daemon off;' \
        >"$WORK/nginx.log" 2>&1 &
    PIDS[nginx]=$!
    wait_port "$NGINX_PORT" || die "nginx did not listen on $NGINX_PORT"
    for v in "${VERSIONS[@]}"; do
        tally "$(cd "$HERE" && "$NODE" drive.mjs "http://127.0.0.1:$NGINX_PORT/mcp" "$v" ev everything \
            call read prompt progress 2>&1 | sed 's/^\(ok  *\|FAIL  *\)/&gateway-config: behind nginx: /' || true)"
    done
    served_by_all() { # every instance answered some of those requests
        local n
        n=$(grep -o 'upstream=127.0.0.1:[0-9]*' "$WORK/mcp-gateway.access.log" | sort -u | wc -l)
        [ "$n" -eq 3 ]
    }
    check "behind nginx: the three instances shared the requests" served_by_all
    NGINX_HEALTH="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_PORT/healthz" || true)"
    check "behind nginx: /healthz 200 ($NGINX_HEALTH)" test "$NGINX_HEALTH" = 200
    for n in nginx gw1 gw2 gw3; do stop "$n"; done
else
    echo "FAIL gateway-config: nginx not found (apt-get install nginx)"
    FAIL=$((FAIL + 1))
fi

stop gateway
check "no backend child left after SIGTERM" test -z "$(pgrep -f "$EVERYTHING stdio" || true)"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
