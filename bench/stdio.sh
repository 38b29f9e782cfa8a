#!/usr/bin/env bash
# bench/stdio.sh - stdio round trips of `tools/call echo`, snodo beside rmcp, in one run
# (issue 14). Builds `cargo build --release -p snodo-cli` (the binary users build) and the
# rmcp 3.11 stdio echo server in bench/rmcp-stdio (under /tmp, never committed), then runs
# bench/stdio_bench.py. Extra arguments go to the script (e.g. --reps 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
cargo build --release -p snodo-cli
RMCP_TARGET="${RMCP_TARGET:-/tmp/snodo-bench-rmcp-stdio}"
cargo build --release --manifest-path bench/rmcp-stdio/Cargo.toml --target-dir "$RMCP_TARGET"
exec python3 bench/stdio_bench.py --snodo "$TARGET/release/snodo" \
  --rmcp "$RMCP_TARGET/release/rmcp-stdio-bench-server" "$@"
