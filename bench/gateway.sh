#!/usr/bin/env bash
# bench/gateway.sh - one fixed-cost stdio MCP server (the echo fixture) behind snodo gateway
# and behind the stdio->HTTP bridges people use, side by side in one run, as ratios
# (issue 33, "Performance"); direct stdio is the floor. Installs the pinned peers under
# bench/gateway/ (never committed: node_modules/, .venv/, cargo/):
#   supergateway 4.0.0 and mcp-proxy 6.7.19 (npm, package-lock.json: `npm ci`)
#   mcp-proxy 0.13.0 (PyPI, requirements.txt, in a venv)
#   mcp-proxy 0.6.0 (crates, tower-mcp; `cargo install --locked --no-default-features`:
#     the leanest build of it; skipped, and said so, if it does not build in 30 min)
# builds the release snodo (`cargo build --release -p snodo-cli`) and runs
# bench/gateway.py. Extra arguments go to the script (e.g. --reps 1 --only snodo,mcpp-rs).
# SKIP_INSTALL=1 uses what is already installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
PEERS=bench/gateway
RS_VERSION=0.6.0
if [ -z "${SKIP_INSTALL:-}" ]; then
  (cd "$PEERS" && npm ci --no-audit --no-fund --silent)
  [ -x "$PEERS/.venv/bin/python" ] || python3 -m venv "$PEERS/.venv"
  "$PEERS/.venv/bin/pip" install -q -r "$PEERS/requirements.txt"
  if [ ! -x "$PEERS/cargo/bin/mcp-proxy" ]; then
    timeout 1800 cargo install mcp-proxy --version "=$RS_VERSION" --locked \
      --no-default-features --root "$PEERS/cargo" \
      || echo "gateway.sh: mcp-proxy $RS_VERSION did not build; measured without it" >&2
  fi
  cargo build --release -p snodo-cli
fi
RS="$PEERS/cargo/bin/mcp-proxy"
[ -x "$RS" ] || RS=""
exec python3 bench/gateway.py --snodo "$TARGET/release/snodo" --peers "$PEERS" \
  --mcp-proxy-rs "$RS" "$@"
