#!/usr/bin/env bash
# Messages and exit codes: every number on the command line goes through one
# strict parser; gc on a run that does not exist creates nothing; file
# names in any script round-trip exactly and quietly.
. "$(dirname "$0")/lib.sh"

cat >job.sh <<'JOB'
#!/bin/sh
# Tries each --step the test gives, recording the exit codes, then a good one.
for s in "$@"; do
    "$SPOTRUN_BIN" commit --step "$s" 2>>"$OUT/commit.err"
    echo "$s=$?" >>"$OUT/codes"
done
echo ok >"$SPOTRUN_CKPT_DIR/f"
"$SPOTRUN_BIN" commit --step 12
JOB
chmod +x job.sh

test_expect_success 'commit --step refuses anything but a plain non-negative integer (64)' '
    OUT=$PWD "$SPOTRUN" run --run-id steps -- ./job.sh 12abc 1e99 "1 2" " 7" +7 -3 0x10 \
        99999999999999999999 2>run.err || { cat run.err; false; } &&
    cat codes &&
    test "$(grep -c "=64$" codes)" = 8 &&
    grep "invalid value \"12abc\" for --step" commit.err &&
    "$SPOTRUN" show steps | grep -E "^ +1 +12 "
'

test_expect_success 'durations and sizes refuse hex floats, exponents and inf (64)' '
    for v in 0x1p3 0x1p3s 1e3 inf nan " 5s"; do
        expect_code 64 "$SPOTRUN" run --every "$v" -- true 2>err || exit 1
        grep "invalid value" err || exit 1
        expect_code 64 "$SPOTRUN" run --gpu-mem-limit "$v" -- true 2>/dev/null || exit 1
    done &&
    expect_code 64 env SPOTRUN_GRACE=0x1p3 "$SPOTRUN" run -- true 2>err &&
    grep "invalid SPOTRUN_GRACE" err &&
    expect_code 64 "$SPOTRUN" run --keep 1e2 -- true 2>/dev/null &&
    expect_code 64 "$SPOTRUN" show steps --price-per-hour 0x1p1 2>/dev/null &&
    expect_code 64 "$SPOTRUN" push steps . --step 1e3 2>/dev/null
'

test_expect_success 'gc of a run that does not exist: 66, and no phantom run appears' '
    expect_code 66 "$SPOTRUN" gc typo-run --keep 1 2>err &&
    grep "no run \"typo-run\"" err &&
    test ! -e "$SPOTRUN_STORE/typo-run" &&
    ! "$SPOTRUN" ls | grep typo-run
'

test_expect_success 'non-ASCII file names round-trip exactly and quietly, in any locale' '
    mkdir -p names && echo a >"names/café.txt" && echo b >"names/日本語.bin" &&
    echo c >"names/$(printf "l\351gacy")" &&
    for loc in C POSIX C.UTF-8; do
        rm -rf "names-$loc" &&
        env -u LANGUAGE LC_ALL=$loc "$SPOTRUN" push "names-$loc" names 2>push.err &&
        env -u LANGUAGE LC_ALL=$loc "$SPOTRUN" pull "names-$loc" "out-$loc" 2>pull.err &&
        cat push.err pull.err &&
        ! grep -i -e warning -e translate push.err pull.err &&
        diff -r names "out-$loc" || exit 1
    done &&
    zstd -dc "$SPOTRUN_STORE/names-C/ckpt/"*/data.tar.zst | tar -t 2>/dev/null | grep -x "café.txt"
'

test_expect_success 'a store path spotrun may not create: 77 with the cause, not 65' '
    if mkdir /sys/spotrun-t0680 2>/dev/null; then rmdir /sys/spotrun-t0680; exit 0; fi &&
    mkdir -p src && echo data >src/f &&
    expect_code 77 "$SPOTRUN" push r src --store /sys/spotrun-t0680/store 2>err &&
    grep "cannot create store" err
'

. "$(dirname "$0")/s3lib.sh"
s3_start

test_expect_success 'S3: a missing bucket is named by push, gc and run (66), not "No such file"' '
    for c in "push r src" "gc r --keep 1" "run --lease-wait 1s --run-id r -- true"; do
        expect_code 66 "$SPOTRUN" ${c%% *} --store s3://no-such-bucket/x ${c#* } 2>err || exit 1
        cat err
        grep "NoSuchBucket (the bucket does not exist" err || exit 1
        ! grep "No such file" err || exit 1
    done
'

test_expect_success 'S3: an endpoint answering 200 with a body that is not S3: 78, says so' '
    "$PY" - >garbage.port <<-\PY &
	import http.server
	class H(http.server.BaseHTTPRequestHandler):
	    protocol_version = "HTTP/1.1"
	    def answer(self):
	        n = int(self.headers.get("Content-Length") or 0)
	        if n: self.rfile.read(n)
	        b = b"<html>a captive portal</html>" if self.command != "HEAD" else b""
	        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers()
	        self.wfile.write(b)
	    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = answer
	    def log_message(self, *a): pass
	s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
	print(s.server_address[1], flush=True)
	s.serve_forever()
	PY
    pid=$! && wait_for garbage.port "^[0-9]" && port=$(cat garbage.port) &&
    for c in "ls" "push r src" "pull r out"; do
        expect_code 78 env AWS_ENDPOINT_URL=http://127.0.0.1:$port "$SPOTRUN" $c 2>err || { kill $pid; exit 1; }
        grep "AWS_ENDPOINT_URL an S3 endpoint" err || { kill $pid; exit 1; }
    done &&
    kill $pid
'

test_done
