#!/usr/bin/env bash
# Input rounds through a front snodo (issue 32 step 4), against a server nobody here
# wrote: @modelcontextprotocol/server-everything 2026.8.31 (an initialize-era server
# whose `trigger-elicitation-request` tool sends `elicitation/create` during the call)
# mounted in crates/snodo-compose/examples/compose_front.rs twice:
#   ev   over stdio (a child of the front: the question names no request; the front
#        gives it to the only call in flight on that connection)
#   evh  over Streamable HTTP with sessions (the question arrives on the call's own SSE
#        answer)
# Driven by
#   - the official TypeScript clients with an elicitation handler: @modelcontextprotocol/sdk
#     1.32.2 on 2025-11-25 and 2025-06-18 (the front asks with a server request) and
#     @modelcontextprotocol/client 2.4.0 on 2026-07-28 (an input_required round, the
#     backend call parked on the front meanwhile);
#   - snodo-client on 2026-07-28 (tests/interop_rounds.rs): the raw input_required round,
#     continued by hand, then by the client's own driver.
# Then `snodo gateway --backend ev=stdio:...` (the binary) the same way with the
# TypeScript clients.
# One line per check, ends with "N passed, M failed"; exit 0 iff M == 0, 2 on setup
# errors. Every process listens on 127.0.0.1 and is stopped by PID.
#
# Environment: FRONT_BIN (default <target>/debug/examples/compose_front, built when
# missing), NODE (>= 20).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
FRONT_BIN="${FRONT_BIN:-$TARGET/debug/examples/compose_front}"
NODE="${NODE:-node}"

die() { echo "interop/compose/rounds: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE, >= 20)"
. "$HERE/lib.sh"
npm_install
if [ ! -x "$FRONT_BIN" ]; then
    (cd "$REPO" && cargo build -q -p snodo-compose --example compose_front >&2) || die "building compose_front failed"
fi
EVERYTHING="$HERE/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

EVH_PORT=$(free_port)
FRONT_PORT=$(free_port)
start evh "$EVH_PORT" env PORT="$EVH_PORT" "$NODE" --require "$HERE/loopback.cjs" "$EVERYTHING" streamableHttp
start front "$FRONT_PORT" env RUST_LOG="${RUST_LOG:-snodo_compose=info}" "$FRONT_BIN" "127.0.0.1:$FRONT_PORT" \
    "ev=stdio:$NODE $EVERYTHING stdio" \
    "evh=http://127.0.0.1:$EVH_PORT/mcp"
URL="http://127.0.0.1:$FRONT_PORT/mcp"
for _ in $(seq 100); do grep -q '^ready' "$WORK/front.log" && break; sleep 0.1; done

for v in 2026-07-28 2025-11-25 2025-06-18; do
    for ns in ev evh; do
        tally "$(cd "$HERE" && "$NODE" drive.mjs "$URL" "$v" "$ns" everything elicit 2>&1 || true)"
    done
done
out="$(cd "$REPO" && COMPOSE_FRONT_URL="$URL" COMPOSE_ELICIT_TOOLS="ev_trigger-elicitation-request evh_trigger-elicitation-request" \
    cargo test -q -p snodo-compose --test interop_rounds -- --ignored --nocapture 2>&1 || true)"
tally "$(grep -E '^(ok|FAIL) ' <<<"$out" || true)"
if ! grep -q '^test result: ok. 1 passed' <<<"$out"; then
    echo "FAIL snodo-client x 2026-07-28: $(grep -E 'panicked|assert' <<<"$out" | head -3)"
    FAIL=$((FAIL + 1))
fi

stop front

# The same through the binary: `snodo gateway --backend ev=stdio:...`.
SNODO_BIN="${SNODO_BIN:-$TARGET/debug/snodo}"
(cd "$REPO" && cargo build -q -p snodo-cli >&2) || die "building snodo failed"
GW_PORT=$(free_port)
start gateway "$GW_PORT" "$SNODO_BIN" gateway --addr "127.0.0.1:$GW_PORT" --backend "ev=stdio:$NODE $EVERYTHING stdio"
for v in 2026-07-28 2025-11-25 2025-06-18; do
    tally "$(cd "$HERE" && "$NODE" drive.mjs "http://127.0.0.1:$GW_PORT/mcp" "$v" ev everything elicit 2>&1 |
        sed 's/^\(ok  *\|FAIL  *\)/&gateway: /' || true)"
done
stop gateway
check "no backend child left after the front and the gateway stopped" test -z "$(pgrep -f "$EVERYTHING stdio" || true)"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
