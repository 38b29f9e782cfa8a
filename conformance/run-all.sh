#!/usr/bin/env bash
# Run the conformance lanes (four revisions and the tasks extension) in sequence (see lane.sh), then one summary line
# per lane and the overall "N passed, M failed" (scenarios, summed over the lanes).
# A lane that ends without a result line (setup error) counts as 1 failed.
# Exit 0 iff every lane passed.
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LANES=(2026-07-28 2025-11-25 2025-06-18 2025-03-26 tasks)
stamp="$(date -u +%Y%m%dT%H%M%SZ)"

total_passed=0
total_failed=0
summary=()
for lane in "${LANES[@]}"; do
  echo "=== lane $lane"
  log="$(mktemp)"
  rc=0
  CONFORMANCE_OUT="${CONFORMANCE_OUT_ROOT:-$DIR/results/all-$stamp}/$lane" \
    bash "$DIR/lane.sh" "$lane" 2>&1 | tee "$log" || rc=$?
  last="$(tail -n 1 "$log")"
  rm -f "$log"
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    p="${BASH_REMATCH[1]}" f="${BASH_REMATCH[2]}"
    summary+=("lane $lane: $last")
  else
    p=0 f=1
    summary+=("lane $lane: ERROR (exit $rc, no result)")
  fi
  (( rc == 0 )) || (( f > 0 )) || f=1   # a failing exit code never counts as green
  total_passed=$(( total_passed + p ))
  total_failed=$(( total_failed + f ))
  echo
done

echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "$total_passed passed, $total_failed failed"
[[ "$total_failed" -eq 0 ]]
