#!/usr/bin/env bash
# Debian's Prometheus scraping `snodo serve --metrics-addr` (issue 19): the lane makes
# MCP requests to the demo, then asks Prometheus's own HTTP API for the counters those
# requests moved. A second target, `snodo fixture` (which has task tools), runs a task:
# the task series as Prometheus sees them while it works and once it completed. Everything listens on 127.0.0.1; every process is stopped by PID.
# Ends with "N passed, M failed"; exit 0 iff M == 0.
#
# Environment: SNODO_BIN (default <repo>/target/debug/snodo), PROMETHEUS (default
# prometheus, installed with apt-get if missing), PYTHON (default python3).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SNODO_BIN="${SNODO_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/snodo}"
PYTHON="${PYTHON:-python3}"
PROMETHEUS="${PROMETHEUS:-prometheus}"

die() { echo "prometheus: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
[ -x "$SNODO_BIN" ] || die "no snodo binary at $SNODO_BIN (cargo build -p snodo-cli)"
command -v "$PYTHON" >/dev/null || die "python3 not found"
if ! command -v "$PROMETHEUS" >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus) >&2 ||
        die "apt-get install prometheus failed"
fi
command -v "$PROMETHEUS" >/dev/null || die "prometheus not found after install"
echo "prometheus: $("$PROMETHEUS" --version 2>&1 | head -1)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/snodo-prometheus.XXXXXX")"
mkdir -p "$WORK/root"
printf 'hello metrics\n' >"$WORK/root/hello.txt"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
MCP_PORT="$(port)"; METRICS_PORT="$(port)"; PROM_PORT="$(port)"
TASK_PORT="$(port)"; TASK_METRICS_PORT="$(port)"

"$SNODO_BIN" serve --addr "127.0.0.1:$MCP_PORT" --metrics-addr "127.0.0.1:$METRICS_PORT" \
    --root "$WORK/root" >"$WORK/snodo.log" 2>&1 &
PIDS+=($!)
"$SNODO_BIN" fixture --addr "127.0.0.1:$TASK_PORT" --protocols 2026-07-28 \
    --metrics-addr "127.0.0.1:$TASK_METRICS_PORT" >"$WORK/fixture.log" 2>&1 &
PIDS+=($!)

cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: snodo
    static_configs:
      - targets: ["127.0.0.1:$METRICS_PORT"]
  - job_name: tasks
    static_configs:
      - targets: ["127.0.0.1:$TASK_METRICS_PORT"]
YAML
"$PROMETHEUS" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)

set +e
"$PYTHON" "$HERE/check.py" "$MCP_PORT" "$PROM_PORT" "$TASK_PORT"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
    echo "--- snodo log (tail)"; tail -n 20 "$WORK/snodo.log"
    echo "--- fixture log (tail)"; tail -n 20 "$WORK/fixture.log"
    echo "--- prometheus log (tail)"; tail -n 20 "$WORK/prometheus.log"
fi
exit "$rc"
