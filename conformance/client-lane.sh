#!/usr/bin/env bash
# Run one official MCP conformance lane in CLIENT mode: the runner starts a mock server
# per scenario and runs `snodo client-conformance SERVER_URL` (the snodo-client driver,
# crates/snodo-cli/src/client_conformance.rs) against it.
#
#   bash conformance/client-lane.sh LANE   LANE: 2026-07-28 | 2025-11-25 | 2025-06-18 | 2025-03-26
#
# Judges every client scenario the runner applies at LANE against
# expected-failures/client-LANE.yml; the 2026-07-28 lane also runs the authorization
# extension scenarios (client credentials, enterprise-managed authorization, DPoP,
# workload identity), each on its own with --force since no spec version selects them. Prints PASS / FAIL / XFAIL per scenario and ends
# with "N passed, M failed" (scenarios). Exit 0 iff M == 0; 2 on setup errors.
#
# Environment:
#   SNODO_BIN                  binary to test (default <repo>/target/debug/snodo; not built here)
#   CONFORMANCE_OUT            results directory (default conformance/results/client-LANE-<UTC time>)
#   CONFORMANCE_TIMEOUT_MS     per-scenario limit given to the runner (default 30000)
#   CONFORMANCE_RUNNER_LIMIT_S limit for the whole runner call (default 600)
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$DIR/.." && pwd)"
LANE="${1:-}"
case "$LANE" in
  2026-07-28|2025-11-25|2025-06-18|2025-03-26) ;;
  *) echo "usage: $0 2026-07-28|2025-11-25|2025-06-18|2025-03-26" >&2; exit 2 ;;
esac

# shellcheck source=lib/runner.sh
source "$DIR/lib/runner.sh"
BIN="${SNODO_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/snodo}"
BASELINE="$DIR/expected-failures/client-$LANE.yml"
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-30000}"
RUNNER_LIMIT_S="${CONFORMANCE_RUNNER_LIMIT_S:-600}"
OUTDIR="${CONFORMANCE_OUT:-$DIR/results/client-$LANE-$(date -u +%Y%m%dT%H%M%SZ)}"
export NO_COLOR=1 FORCE_COLOR=0 EVALUATE_MODE=client

ensure_runner client-lane.sh
if [[ ! -x "$BIN" ]]; then
  echo "client-lane.sh: snodo binary not found at $BIN (cargo build -p snodo-cli, or set SNODO_BIN)" >&2
  exit 2
fi
[[ -f "$BASELINE" ]] || { echo "client-lane.sh: missing $BASELINE" >&2; exit 2; }
"$NODE" "$DIR/lib/evaluate.mjs" /nonexistent /dev/null "$BASELINE" >/dev/null || [[ $? -ne 2 ]] || exit 2
if [[ -n "$(ls -A "$OUTDIR" 2>/dev/null)" ]]; then
  echo "client-lane.sh: $OUTDIR is not empty; pick another CONFORMANCE_OUT" >&2
  exit 2
fi
mkdir -p "$OUTDIR/raw"

"$NODE" "$CLI" list --client --spec-version "$LANE" </dev/null \
  | sed -n 's/^  - \([^ ]*\).*/\1/p' >"$OUTDIR/scenarios.txt"
EXTENSION_SCENARIOS=()
if [[ "$LANE" == 2026-07-28 ]]; then
  EXTENSION_SCENARIOS=(auth/client-credentials-basic auth/client-credentials-jwt
    auth/enterprise-managed-authorization auth/dpop auth/dpop-nonce auth/wif-jwt-bearer)
fi
printf '%s\n' "${EXTENSION_SCENARIOS[@]}" | sed '/^$/d' >>"$OUTDIR/scenarios.txt"
count="$(wc -l <"$OUTDIR/scenarios.txt")"
[[ "$count" -gt 0 ]] || { echo "client-lane.sh: the runner lists no client scenarios for $LANE" >&2; exit 2; }

echo "client lane $LANE: conformance $("$NODE" "$CLI" --version), node $("$NODE" --version), $count scenarios"
echo "driver: $BIN client-conformance SERVER_URL"
echo "results: $OUTDIR"

RUNNER_PID=""
cleanup() {
  if [[ -n "$RUNNER_PID" ]]; then
    kill -TERM "$RUNNER_PID" 2>/dev/null || true
    wait "$RUNNER_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The runner splits --command on spaces: a path with spaces would break it.
[[ "$BIN" != *" "* ]] || { echo "client-lane.sh: SNODO_BIN must not contain spaces" >&2; exit 2; }
timeout -k 10 "$RUNNER_LIMIT_S" "$NODE" "$CLI" client --command "$BIN client-conformance" \
  --suite all --spec-version "$LANE" --timeout "$TIMEOUT_MS" -o "$OUTDIR/raw" \
  </dev/null >"$OUTDIR/runner.log" 2>&1 &
RUNNER_PID=$!
rc=0
wait "$RUNNER_PID" || rc=$?
RUNNER_PID=""
echo "$rc" >"$OUTDIR/runner.rc"
if [[ "$rc" -eq 124 || "$rc" -eq 137 ]]; then
  echo "note: the runner hit its ${RUNNER_LIMIT_S}s limit; scenarios without results fail"
fi
for scenario in "${EXTENSION_SCENARIOS[@]}"; do
  timeout -k 10 "$(( TIMEOUT_MS / 1000 + 30 ))" "$NODE" "$CLI" client --command "$BIN client-conformance" \
    --scenario "$scenario" --force --spec-version "$LANE" --timeout "$TIMEOUT_MS" -o "$OUTDIR/raw" \
    </dev/null >>"$OUTDIR/runner.log" 2>&1 || true
done

set +e
"$NODE" "$DIR/lib/evaluate.mjs" "$OUTDIR/raw" "$OUTDIR/scenarios.txt" "$BASELINE" "$OUTDIR/runner.log" | tee "$OUTDIR/summary.txt"
exit "${PIPESTATUS[0]}"
