#!/usr/bin/env bash
# Run one official MCP conformance lane against the snodo fixture server.
#
#   bash conformance/lane.sh LANE        LANE: 2026-07-28 | 2025-11-25 | 2025-06-18 | 2025-03-26 | tasks
#
# Starts `snodo fixture` on a free loopback port, runs the pinned runner with
# `--suite all --spec-version LANE` (lane `tasks`: every tasks-* extension scenario,
# one `--scenario NAME --force` run each on the 2026-07-28 wire), stops the fixture, and judges every scenario
# against expected-failures/LANE.yml. Prints PASS / FAIL / XFAIL per scenario and
# ends with "N passed, M failed" (scenarios). Exit 0 iff M == 0; 2 on setup errors.
#
# Environment:
#   SNODO_BIN                  binary to test (default <repo>/target/debug/snodo; not built here)
#   CONFORMANCE_OUT            results directory (default conformance/results/LANE-<UTC time>)
#   CONFORMANCE_TIMEOUT_MS     per-scenario limit given to the runner (default 30000)
#   CONFORMANCE_RUNNER_LIMIT_S limit for the whole runner call (default: scenarios x per-scenario + 60)
#   CONFORMANCE_WAIT_S         how long the fixture may take to answer (default 30)
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$DIR/.." && pwd)"
LANE="${1:-}"

case "$LANE" in
  2026-07-28) PROTOCOLS="2026-07-28" ;;
  # The tasks extension (SEP-2663) exists on 2026-07-28 only.
  tasks) PROTOCOLS="2026-07-28" ;;
  2025-11-25) PROTOCOLS="2026-07-28,2025-11-25,2025-06-18" ;;
  # The runner always offers 2025-11-25 in initialize; only a fixture without it
  # answers 2025-06-18, which is what this lane must judge.
  2025-06-18) PROTOCOLS="2026-07-28,2025-06-18" ;;
  # Likewise: only a fixture without the later initialize-era versions answers
  # 2025-03-26, whose clients send no MCP-Protocol-Version header.
  2025-03-26) PROTOCOLS="2026-07-28,2025-03-26" ;;
  *) echo "usage: $0 2026-07-28|2025-11-25|2025-06-18|2025-03-26|tasks" >&2; exit 2 ;;
esac

# shellcheck source=lib/runner.sh
source "$DIR/lib/runner.sh"
BIN="${SNODO_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/snodo}"
BASELINE="$DIR/expected-failures/$LANE.yml"
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-30000}"
WAIT_S="${CONFORMANCE_WAIT_S:-30}"
OUTDIR="${CONFORMANCE_OUT:-$DIR/results/$LANE-$(date -u +%Y%m%dT%H%M%SZ)}"
export NO_COLOR=1 FORCE_COLOR=0

# ---- runner (Node 22 + pinned conformance) ----------------------------------
ensure_runner lane.sh

if [[ ! -x "$BIN" ]]; then
  echo "lane.sh: snodo binary not found at $BIN" >&2
  echo "lane.sh: build it first (cargo build -p snodo-cli) or set SNODO_BIN" >&2
  exit 2
fi
[[ -f "$BASELINE" ]] || { echo "lane.sh: missing $BASELINE" >&2; exit 2; }
# Reject a malformed baseline before spending minutes on the run (evaluate.mjs exits 2).
"$NODE" "$DIR/lib/evaluate.mjs" /nonexistent /dev/null "$BASELINE" >/dev/null || [[ $? -ne 2 ]] || exit 2
if [[ -n "$(ls -A "$OUTDIR" 2>/dev/null)" ]]; then
  echo "lane.sh: $OUTDIR is not empty; pick another CONFORMANCE_OUT" >&2
  exit 2
fi
mkdir -p "$OUTDIR/raw"

# Extension scenarios are off the spec timeline: each is run on its own with --force.
EXTENSION_SCENARIOS=()
if [[ "$LANE" == tasks ]]; then
  "$NODE" "$CLI" list --server </dev/null \
    | sed -n 's/^  - \(tasks-[^ ]*\).*/\1/p' >"$OUTDIR/scenarios.txt"
else
  # tasks-* (extension) scenarios are never selected by --spec-version; drop them anyway.
  "$NODE" "$CLI" list --server --spec-version "$LANE" </dev/null \
    | sed -n 's/^  - \([^ ]*\).*/\1/p' | { grep -v '^tasks-' || true; } >"$OUTDIR/scenarios.txt"
  if [[ "$LANE" == 2026-07-28 ]]; then
    EXTENSION_SCENARIOS=(sep-2640-skills-directory sep-2640-skills-enumeration sep-2640-skills-manifest)
  fi
  printf '%s\n' "${EXTENSION_SCENARIOS[@]}" | sed '/^$/d' >>"$OUTDIR/scenarios.txt"
fi
count="$(wc -l <"$OUTDIR/scenarios.txt")"
[[ "$count" -gt 0 ]] || { echo "lane.sh: the runner lists no scenarios for $LANE" >&2; exit 2; }
RUNNER_LIMIT_S="${CONFORMANCE_RUNNER_LIMIT_S:-$(( count * (TIMEOUT_MS / 1000 + 1) + 60 ))}"

# ---- fixture ------------------------------------------------------------------
FIXTURE_PID=""
RUNNER_PID=""
cleanup() {
  if [[ -n "$RUNNER_PID" ]]; then
    kill -TERM "$RUNNER_PID" 2>/dev/null || true   # timeout(1) passes it on to the runner
    wait "$RUNNER_PID" 2>/dev/null || true
  fi
  stop_fixture
}
stop_fixture() {
  [[ -n "$FIXTURE_PID" ]] || return 0
  if kill -0 "$FIXTURE_PID" 2>/dev/null; then
    kill -TERM "$FIXTURE_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$FIXTURE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$FIXTURE_PID" 2>/dev/null || true
  fi
  wait "$FIXTURE_PID" 2>/dev/null || true
  FIXTURE_PID=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  "$NODE" -e 'const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# Returns 0 once the fixture answers any HTTP status, 1 if it exits first or times out.
wait_ready() {
  local deadline=$(( SECONDS + WAIT_S ))
  while (( SECONDS < deadline )); do
    kill -0 "$FIXTURE_PID" 2>/dev/null || return 1
    if curl -s -o /dev/null --max-time 2 -X POST \
        -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        --data '{"jsonrpc":"2.0","id":0,"method":"ping"}' "$URL"; then
      return 0
    fi
    sleep 0.2
  done
  return 1
}

# A port picked here can be taken before the fixture binds it: try a few.
for attempt in 1 2 3; do
  PORT="$(free_port)"
  URL="http://127.0.0.1:$PORT/mcp"
  "$BIN" fixture --addr "127.0.0.1:$PORT" --protocols "$PROTOCOLS" \
    </dev/null >"$OUTDIR/fixture.log" 2>&1 &
  FIXTURE_PID=$!
  echo "$FIXTURE_PID" >"$OUTDIR/fixture.pid"
  wait_ready && break
  if kill -0 "$FIXTURE_PID" 2>/dev/null; then
    echo "lane.sh: fixture did not answer at $URL within ${WAIT_S}s; fixture.log:" >&2
  else
    frc=0; wait "$FIXTURE_PID" || frc=$?
    echo "lane.sh: fixture exited (status $frc) before answering; fixture.log:" >&2
  fi
  tail -n 30 "$OUTDIR/fixture.log" | sed 's/^/  | /' >&2
  stop_fixture
  # retry only a lost race for the port
  [[ "$attempt" -lt 3 ]] && grep -qi 'in use' "$OUTDIR/fixture.log" || exit 2
done

echo "lane $LANE: conformance $("$NODE" "$CLI" --version), node $("$NODE" --version), $count scenarios"
echo "fixture: $BIN fixture --addr 127.0.0.1:$PORT --protocols $PROTOCOLS (pid $FIXTURE_PID)"
echo "results: $OUTDIR"

# ---- runner -------------------------------------------------------------------
# In the background so that a signal to this script is handled at once (see cleanup).
if [[ "$LANE" == tasks ]]; then
  # Extension scenarios match no spec version: each one forced, on the 2026-07-28 wire.
  timeout -k 10 "$RUNNER_LIMIT_S" bash -c '
    rc=0
    while read -r s; do
      "$1" "$2" server --url "$3" --scenario "$s" --spec-version 2026-07-28 --force \
        --timeout "$4" -o "$5" </dev/null || rc=1
    done <"$6"
    exit "$rc"' tasks "$NODE" "$CLI" "$URL" "$TIMEOUT_MS" "$OUTDIR/raw" "$OUTDIR/scenarios.txt" \
    </dev/null >"$OUTDIR/runner.log" 2>&1 &
else
  timeout -k 10 "$RUNNER_LIMIT_S" "$NODE" "$CLI" server --url "$URL" \
    --suite all --spec-version "$LANE" --timeout "$TIMEOUT_MS" -o "$OUTDIR/raw" \
    </dev/null >"$OUTDIR/runner.log" 2>&1 &
fi
RUNNER_PID=$!
rc=0
wait "$RUNNER_PID" || rc=$?
RUNNER_PID=""
echo "$rc" >"$OUTDIR/runner.rc"
if [[ "$rc" -eq 124 || "$rc" -eq 137 ]]; then
  echo "note: the runner hit its ${RUNNER_LIMIT_S}s limit; scenarios without results fail"
fi
for scenario in "${EXTENSION_SCENARIOS[@]}"; do
  timeout -k 10 "$(( TIMEOUT_MS / 1000 + 30 ))" "$NODE" "$CLI" server --url "$URL" \
    --scenario "$scenario" --force --spec-version "$LANE" --timeout "$TIMEOUT_MS" -o "$OUTDIR/raw" \
    </dev/null >>"$OUTDIR/runner.log" 2>&1 || true
done
if ! kill -0 "$FIXTURE_PID" 2>/dev/null; then
  frc=0; wait "$FIXTURE_PID" || frc=$?
  echo "note: the fixture exited (status $frc) during the run; last lines of fixture.log:"
  tail -n 20 "$OUTDIR/fixture.log" | sed 's/^/  | /'
fi
stop_fixture

# ---- verdicts -------------------------------------------------------------------
set +e
"$NODE" "$DIR/lib/evaluate.mjs" "$OUTDIR/raw" "$OUTDIR/scenarios.txt" "$BASELINE" "$OUTDIR/runner.log" | tee "$OUTDIR/summary.txt"
status="${PIPESTATUS[0]}"
exit "$status"
