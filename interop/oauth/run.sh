#!/usr/bin/env bash
# The OAuth lane: a real authorization server (oidc-provider, pinned in package.json) on
# 127.0.0.1 with resource indicators and JWT access tokens for snodo's /mcp, and
# `snodo serve --oauth-issuer …` protecting the demo; lane.mjs prints every exchange
# (401 challenge, protected-resource metadata, client-credentials tokens, the step-up
# 403 -> union of scopes -> 200, the official TypeScript SDK client doing it by itself,
# key rotation at the provider picked up without restarting snodo); then code.mjs runs
# `snodo client --oauth` through a real authorization-code login (it submits the
# provider's login and consent forms): token file reuse, refresh after expiry with a
# rotated refresh token, step-up to the union of scopes.
# Ends with "N passed, M failed" (both scripts); exit 0 iff M == 0. Bounded: about 75 s.
#
# Environment:
#   SNODO_BIN  server binary (default: <repo>/target/debug/snodo; not built here)
#   NODE       node binary (default: node on PATH; >= 20)
#   OAUTH_KEEP=1 keep the temporary folder (logs)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SNODO_BIN="${SNODO_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/snodo}"
NODE="${NODE:-node}"

die() { echo "interop/oauth: $*" >&2; echo "0 passed, 1 failed"; exit 2; }

command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE, >= 20)"
[ "$("$NODE" -p 'process.versions.node.split(".")[0]')" -ge 20 ] || die "node >= 20 required"
[ -x "$SNODO_BIN" ] || die "snodo binary not found at $SNODO_BIN (build it first or set SNODO_BIN)"

installed_version() {
    "$NODE" -e 'try { process.stdout.write(require(process.argv[1] + "/package.json").version) } catch {}' \
        "$HERE/node_modules/$1" 2>/dev/null || true
}
if [ "$(installed_version oidc-provider)" != "9.13.3" ] ||
   [ "$(installed_version @modelcontextprotocol/sdk)" != "1.32.2" ]; then
    echo "interop/oauth: installing pinned packages (npm ci)" >&2
    (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci failed"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/snodo-oauth-lane.XXXXXX")"
ROOT="$WORK/root"
mkdir -p "$ROOT"
printf 'hello world\n' >"$ROOT/hello.txt"

AS_PID=""
SNODO_PID=""
stop() { # pid
    local pid="$1"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    stop "$SNODO_PID"
    stop "$AS_PID"
    if [ "${OAUTH_KEEP:-}" = 1 ]; then echo "interop/oauth: kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    "$NODE" -e 'const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => console.log(p)); });'
}
wait_for() { # url: any HTTP answer within 10 s
    "$NODE" -e '
const deadline = Date.now() + 10000;
(async () => {
  while (Date.now() < deadline) {
    try { await fetch(process.argv[1], { signal: AbortSignal.timeout(1000) }); process.exit(0); } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  process.exit(1);
})();' "$1"
}

AS_PORT="$(free_port)"
MCP_PORT="$(free_port)"
ISSUER="http://127.0.0.1:$AS_PORT"
MCP_URL="http://127.0.0.1:$MCP_PORT/mcp"
CLIENT_ID=snodo-lane
CLIENT_SECRET="lane-secret-$RANDOM$RANDOM"

# --- the authorization server -------------------------------------------------------
PORT="$AS_PORT" RESOURCE="$MCP_URL" OTHER_RESOURCE="http://127.0.0.1:$MCP_PORT/other-mcp" CLIENT_ID="$CLIENT_ID" CLIENT_SECRET="$CLIENT_SECRET" \
    SCOPES="mcp files:read" "$NODE" "$HERE/provider.mjs" >"$WORK/as.log" 2>&1 &
AS_PID=$!
wait_for "$ISSUER/.well-known/openid-configuration" || { cat "$WORK/as.log" >&2; die "oidc-provider did not start"; }
echo "interop/oauth: oidc-provider pid $AS_PID at $ISSUER" >&2

# --- snodo ----------------------------------------------------------------------------
"$SNODO_BIN" serve --addr "127.0.0.1:$MCP_PORT" --root "$ROOT" \
    --oauth-issuer "$ISSUER" --oauth-scope mcp --oauth-tool-scope search=files:read --oauth-dpop --oauth-dpop-nonce \
    >"$WORK/snodo.log" 2>&1 &
SNODO_PID=$!
# snodo fetches the JWKS at start-up; it fetches it again for an unknown kid at most
# once per 30 s (the default), so the rotation step waits for that.
JWKS_READY_AT=$(( $(date +%s%3N) + 31000 ))
wait_for "http://127.0.0.1:$MCP_PORT/healthz" || { cat "$WORK/snodo.log" >&2; die "snodo did not start"; }
echo "interop/oauth: snodo pid $SNODO_PID at $MCP_URL" >&2
sed 's/^/snodo: /' "$WORK/snodo.log"

# --- the exchanges ----------------------------------------------------------------------
status=0
MCP_URL="$MCP_URL" ISSUER="$ISSUER" CLIENT_ID="$CLIENT_ID" CLIENT_SECRET="$CLIENT_SECRET" \
    PROVIDER_PID="$AS_PID" AS_LOG="$WORK/as.log" SNODO_LOG="$WORK/snodo.log" JWKS_READY_AT="$JWKS_READY_AT" \
    timeout 120 "$NODE" "$HERE/lane.mjs" | tee "$WORK/lane.out" || status=$?
# snodo client --oauth with a real authorization-code login (code.mjs plays the browser).
SNODO_BIN="$SNODO_BIN" MCP_URL="$MCP_URL" ISSUER="$ISSUER" WORK="$WORK" \
    timeout 180 "$NODE" "$HERE/code.mjs" | tee "$WORK/code.out" || status=$?
total() { # file: its "N passed, M failed" line, or "0 passed, 1 failed"
    grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1 || echo "0 passed, 1 failed"
}
read -r p1 _ f1 _ <<<"$(total "$WORK/lane.out")"
read -r p2 _ f2 _ <<<"$(total "$WORK/code.out")"

echo
echo "--- the provider's log (requests snodo and the clients made)"
grep '^as: ' "$WORK/as.log" || true
# Nothing about a token in snodo's log (a JWS starts with eyJ).
if grep -q -e "$CLIENT_SECRET" -e 'eyJ' "$WORK/snodo.log"; then
    echo "interop/oauth: a token or the client secret appears in snodo's log" >&2
    status=1
fi
echo "$(( p1 + p2 )) passed, $(( f1 + f2 + (status != 0 && f1 + f2 == 0 ? 1 : 0) )) failed"
exit "$status"
