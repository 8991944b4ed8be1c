#!/usr/bin/env bash
# S3 failures end quickly with a message that names the cause and a
# sysexits code: wrong secret (77), unknown key id (77), missing bucket,
# unreachable endpoint (69 after bounded retries).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start
mkdir -p src && echo data >src/f

test_expect_success 'a wrong secret key: 77, names AWS_SECRET_ACCESS_KEY, no hang' '
    start=$(date +%s) &&
    expect_code 77 env AWS_SECRET_ACCESS_KEY=wrong-secret "$SPOTRUN" push r src 2>err.log &&
    test $(($(date +%s) - start)) -lt 10 &&
    grep "403 SignatureDoesNotMatch (check AWS_SECRET_ACCESS_KEY" err.log &&
    ! grep -q wrong-secret err.log
'

test_expect_success 'a wrong secret key on pull and ls too' '
    expect_code 77 env AWS_SECRET_ACCESS_KEY=wrong "$SPOTRUN" ls 2>err2.log &&
    grep SignatureDoesNotMatch err2.log &&
    expect_code 77 env AWS_SECRET_ACCESS_KEY=wrong "$SPOTRUN" pull r out 2>err3.log &&
    grep SignatureDoesNotMatch err3.log
'

test_expect_success 'an unknown access key id: 77, names AWS_ACCESS_KEY_ID' '
    expect_code 77 env AWS_ACCESS_KEY_ID=NOSUCHKEY "$SPOTRUN" ls 2>err4.log &&
    grep "InvalidAccessKeyId (check AWS_ACCESS_KEY_ID" err4.log
'

test_expect_success 'a missing bucket says so' '
    expect_code 66 "$SPOTRUN" ls --store s3://no-such-bucket/x 2>err5.log &&
    grep "NoSuchBucket (the bucket does not exist" err5.log
'

test_expect_success 'no credentials anywhere: 77 naming the sources tried' '
    expect_code 77 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$SPOTRUN" ls 2>err6.log &&
    grep "no AWS credentials found" err6.log
'

test_expect_success 'an unreachable endpoint: 69 after bounded retries, quickly' '
    port=$(python3 -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])") &&
    start=$(date +%s) &&
    expect_code 69 env AWS_ENDPOINT_URL=http://127.0.0.1:$port SPOTRUN_S3_RETRIES=3 \
        "$SPOTRUN" push r src -v 2>err7.log &&
    test $(($(date +%s) - start)) -lt 10 &&
    test "$(grep -c "retrying" err7.log)" -eq 3 &&
    grep "cannot reach s3://bkt/t0240-s3-errors" err7.log
'

test_expect_success 'a server that answers 503 is retried, then succeeds' '
    python3 - "$S3_PORT" >proxy.port 2>proxy.log <<PYEOF &
import http.server, sys, urllib.request, socket
upstream = int(sys.argv[1])
count = {"n": 0}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def handle_one(self):
        count["n"] += 1
        if count["n"] % 2 == 1:
            body = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            n = int(self.headers.get("Content-Length") or 0)
            if n: self.rfile.read(n)
            self.send_response(503); self.send_header("Content-Length", str(len(body))); self.end_headers()
            if self.command != "HEAD": self.wfile.write(body)
            return
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (upstream, self.path), data=data, method=self.command)
        for k, v in self.headers.items():
            if k.lower() not in ("connection",): req.add_header(k, v)
        try: r = urllib.request.urlopen(req); code = r.status; body = r.read(); hdrs = r.headers
        except urllib.error.HTTPError as e: code = e.code; body = e.read(); hdrs = e.headers
        self.send_response(code)
        for k, v in hdrs.items():
            if k.lower() not in ("content-length", "connection", "transfer-encoding", "date"): self.send_header(k, v)
        self.send_header("Content-Length", hdrs.get("Content-Length", "0") if self.command == "HEAD" else str(len(body))); self.end_headers()
        if self.command != "HEAD": self.wfile.write(body)
    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PYEOF
    ppid=$!
    wait_until 30 "the slow proxy to write proxy.port" test -s proxy.port || exit 1
    AWS_ENDPOINT_URL=http://127.0.0.1:$(cat proxy.port) "$SPOTRUN" push slow src -v 2>slow.log; rc=$?
    kill $ppid
    test $rc -eq 0 && grep "503 SlowDown (attempt 1, retrying)" slow.log
'

test_done
