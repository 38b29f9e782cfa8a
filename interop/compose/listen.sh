#!/usr/bin/env bash
# A backend's resource updates and task tool through `snodo gateway` (issue 32 §4), with
# a real client: server-everything 2026.8.31 over stdio, mounted under "ev" in a
# 2026-07-28-only gateway (which announces resources.subscribe and listChanged), driven
# by @modelcontextprotocol/client 2.4.0 (listen.mjs): a listen stream watching
# demo://ev/resource/dynamic/text/1 hears the backend's update (the gateway subscribed
# at the backend with resources/subscribe), and simulate-research-query (a task the
# backend requires) answers in one call. One line per check, ends with "N passed, M
# failed"; exit 0 iff M == 0, 2 on setup errors. Every process listens on 127.0.0.1
# and is stopped by PID.
#
# Needs `npm ci` in interop/compose and the snodo binary (SNODO_BIN, default
# <target>/debug/snodo; built here when missing). NODE: node >= 20.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
SNODO_BIN="${SNODO_BIN:-$TARGET/debug/snodo}"
NODE="${NODE:-node}"

die() { echo "interop/compose/listen: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
command -v "$NODE" >/dev/null 2>&1 || die "node not found (set NODE, >= 20)"
# shellcheck source=interop/compose/lib.sh
source "$HERE/lib.sh"
npm_install
EVERYTHING="$HERE/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -x "$SNODO_BIN" ] || (cd "$REPO" && cargo build -q -p snodo-cli >&2) || die "building snodo failed"

GW_PORT=$(free_port)
start gateway "$GW_PORT" "$SNODO_BIN" gateway --addr "127.0.0.1:$GW_PORT" --protocols 2026-07-28 \
    --backend "ev=stdio:$NODE $EVERYTHING stdio"
tally "$(cd "$HERE" && timeout 90 "$NODE" listen.mjs "http://127.0.0.1:$GW_PORT/mcp" 2>&1 || true)"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
