# lib-metadata.sh - starts the test cloud metadata service
# (tests/metadata/server.py) for the notice tests; sourced after lib.sh.

# start_metadata CLOUD [server args]: sets MD_URL; test_done stops the
# server (test_bg: it may be started in a body).
start_metadata() {
    local cloud=$1 port=$TRASH/metadata-$1.port i=0
    shift
    rm -f "$port"
    python3 "$SRCDIR/tests/metadata/server.py" --cloud "$cloud" --port-file "$port" "$@" \
        >"$TRASH/metadata-$cloud.log" 2>&1 &
    test_bg $!
    while [ ! -s "$port" ]; do
        i=$((i + 1))
        [ "$i" -lt 100 ] || { say "the metadata server did not start"; cat "$TRASH/metadata-$cloud.log"; exit 1; }
        sleep 0.05
    done
    MD_URL=http://127.0.0.1:$(cat "$port")
}

# md_control WHAT?ARGS: a test control of the server (schedule a notice...).
md_control() { curl -sf -X POST "$MD_URL/_control/$1" >/dev/null; }
# md_get WHAT: a control's JSON answer (acks, stats).
md_get() { curl -sf "$MD_URL/_control/$1"; }

# A job that hears the checkpoint request (it has a handler, so the wrapper
# waits for it) but never commits, so a notice waits until its commit
# deadline. (A job that ignores the request outright is not waited for.)
STUBBORN_JOB='trap ":" USR1; while :; do sleep 0.1; done'
