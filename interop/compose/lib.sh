# Shared by the interop/compose scripts (sourced): background processes listening on
# 127.0.0.1, each stopped by PID, their output in $WORK/NAME.log. The sourcing script
# sets NODE and WORK, and calls `trap cleanup EXIT` with its own extra names first.
declare -A PIDS=()
# stop NAME: SIGTERM, up to 5 s, then SIGKILL; reaped.
stop() {
    local pid="${PIDS[$1]:-}"
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset "PIDS[$1]"
}
free_port() {
    "$NODE" -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}
wait_port() {
    for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# start NAME PORT CMD...: a background process, its output in $WORK/NAME.log
start() {
    local name="$1" port="$2"
    shift 2
    "$@" >"$WORK/$name.log" 2>&1 &
    PIDS[$name]=$!
    wait_port "$port" || { tail -20 "$WORK/$name.log" >&2; die "$name did not listen on $port"; }
}
# tally OUTPUT: print a driver's lines, count its "ok"/"FAIL" lines into PASS/FAIL.
tally() {
    local out="$1"
    echo "$out"
    PASS=$((PASS + $(grep -c '^ok ' <<<"$out" || true)))
    FAIL=$((FAIL + $(grep -c '^FAIL ' <<<"$out" || true)))
}
# eventually SECONDS CMD...: whether CMD succeeds within SECONDS (tried every 0.3 s).
eventually() {
    local until=$((SECONDS + $1))
    shift
    while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.3; done
    return 1
}
