#!/usr/bin/env python3
"""faultproxy.py - a fault-injecting HTTP/1.1 reverse proxy for the S3 tests.

Sits between spotrun and the S3 test server (tests/s3/server.js) and, for a
chosen share of the requests, answers 500 InternalError or 503 SlowDown
itself, resets the connection in the middle of the request or response
body, stalls, or truncates a response. Every other byte is forwarded
unchanged: the request line and headers (Host included, which SigV4 signs
and s3rver verifies) go upstream exactly as received, bodies are streamed
(Content-Length or chunked, `Expect: 100-continue` honoured), and the
client connection stays alive between requests.

    python3 faultproxy.py --upstream http://127.0.0.1:PORT [options]
        prints "port N" once listening on 127.0.0.1 (a free port chosen by
        the kernel), then one line per injected fault:
        "fault KIND #REQ METHOD TARGET" (and with -v one line per request)

Faults (--faults, comma-separated; default: all but slow and 403):
    500       answer 500 InternalError (XML body); the request is not forwarded
    503       answer 503 SlowDown (XML body); the request is not forwarded
    403       answer 403 AccessDenied (XML body), as S3 answers a request its
              credentials may not make (read-only keys writing: with
              --methods PUT,POST,DELETE --rate 1); the request is not forwarded
    reset     forward, then reset the client connection (RST): half-way
              through the request body for requests with one (uploads),
              else half-way through the response body (before the answer
              when it has none)
    stall     like reset, but stop sending / reading for --stall-seconds
              (longer than the client's stall timeout), then close
    slow      forward, and hold the (complete) answer back for
              --stall-seconds: a slow but successful request
    truncate  forward, send the answer's headers (with its Content-Length)
              and half of its body, then close; an answer without a body is
              cut inside its headers

Which requests: each request is eligible when its method is in --methods,
its target (path and query) matches --path, it is among the first --first
requests, it is not among the first --skip requests that pass these tests
(a lease's acquisition before its renewals), and fewer than --max-faults
faults were injected so far; an eligible request gets a fault with probability --rate. The draw depends
only on --seed, the request (method, target without the upload id, Range)
and how often that request was seen before, so a run repeats its faults
although concurrent requests arrive in a different order.

Python 3 standard library only. Stops on SIGTERM / SIGINT.
"""
import argparse
import random
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse

BUF = 256 * 1024
HEAD_MAX = 64 * 1024
KINDS = ("500", "503", "reset", "stall", "truncate", "slow", "403")
ERROR_BODIES = {
    "500": (500, "Internal Server Error", "InternalError",
            "We encountered an internal error. Please try again."),
    "503": (503, "Slow Down", "SlowDown", "Please reduce your request rate."),
    "403": (403, "Forbidden", "AccessDenied", "Access Denied"),
}


class Closed(Exception):
    """The peer closed the connection (or it broke) where a message was expected."""


class Reader:
    """Buffered reads from a socket: heads, exact byte counts, lines."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        data = self.sock.recv(BUF)
        if not data:
            raise Closed()
        self.buf += data

    def head(self):
        """Bytes up to and including the blank line; b"" at a clean EOF."""
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                out, self.buf = self.buf[: i + 4], self.buf[i + 4:]
                return out
            if len(self.buf) > HEAD_MAX:
                raise Closed()
            try:
                self._fill()
            except Closed:
                if not self.buf:
                    return b""
                raise

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out, self.buf = self.buf[: i + 2], self.buf[i + 2:]
                return out
            if len(self.buf) > HEAD_MAX:
                raise Closed()
            self._fill()

    def some(self, limit):
        """Up to limit bytes (at least one); raises Closed at EOF."""
        if not self.buf:
            self._fill()
        out, self.buf = self.buf[:limit], self.buf[limit:]
        return out

    def until_eof(self, limit):
        """Up to limit bytes; b"" at EOF."""
        try:
            return self.some(limit)
        except Closed:
            return b""


class Message:
    """A parsed request or response head (the raw bytes are kept)."""

    def __init__(self, raw):
        self.raw = raw
        lines = raw[:-4].split(b"\r\n")
        self.start = lines[0].decode("latin-1")
        self.headers = {}
        for ln in lines[1:]:
            k, _, v = ln.decode("latin-1").partition(":")
            self.headers[k.strip().lower()] = v.strip()

    def get(self, name, default=""):
        return self.headers.get(name, default)

    def keep_alive(self):
        conn = self.get("connection").lower()
        if "close" in conn:
            return False
        return not self.start.upper().startswith("HTTP/1.0") and not self.start.upper().endswith(
            "HTTP/1.0")

    def framing(self):
        """("chunked",), ("length", n) or ("none",) for a request."""
        if "chunked" in self.get("transfer-encoding").lower():
            return ("chunked",)
        if self.get("content-length"):
            return ("length", int(self.get("content-length")))
        return ("none",)


def response_framing(resp, method):
    status = int(resp.start.split()[1])
    if method == "HEAD" or status < 200 or status in (204, 304):
        return ("none",)
    if "chunked" in resp.get("transfer-encoding").lower():
        return ("chunked",)
    if resp.get("content-length"):
        return ("length", int(resp.get("content-length")))
    return ("eof",)


def body_length(framing):
    return framing[1] if framing[0] == "length" else (0 if framing[0] == "none" else None)


def relay_body(src, dst, framing, budget=None):
    """Copies one body from Reader src to socket dst (dst None: discard).
    With budget, stops after that many bytes and returns False (cut);
    True when the whole body went through."""
    sent = 0

    def put(data):
        nonlocal sent
        if budget is not None and sent + len(data) > budget:
            data = data[: budget - sent]
        if dst is not None and data:
            dst.sendall(data)
        sent += len(data)
        return budget is None or sent < budget

    kind = framing[0]
    if kind == "none":
        return True
    if kind == "length":
        left = framing[1]
        while left > 0:
            data = src.some(min(left, BUF))
            left -= len(data)
            if not put(data):
                return left == 0
        return True
    if kind == "eof":
        while True:
            data = src.until_eof(BUF)
            if not data:
                return True
            if not put(data):
                return False
    # chunked: forward the framing as it is
    while True:
        line = src.line()
        if not put(line):
            return False
        size = int(line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while True:  # trailers, up to the blank line
                t = src.line()
                if not put(t):
                    return False
                if t == b"\r\n":
                    return True
        left = size + 2
        while left > 0:
            data = src.some(min(left, BUF))
            left -= len(data)
            if not put(data):
                return False


def rst_close(sock):
    """Closes with a TCP reset (SO_LINGER 0): the peer sees ECONNRESET."""
    if sock is None:
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def fin_close(sock, drain_s=0.0):
    """Closes cleanly; with drain_s, first reads what the peer still sends
    (so that unread data does not turn the close into a reset)."""
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_WR)
        if drain_s > 0:
            sock.settimeout(drain_s)
            end = time.monotonic() + drain_s
            while time.monotonic() < end and sock.recv(BUF):
                pass
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class Chooser:
    """Decides the fault (or None) of each request; thread-safe."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.seen = {}
        self.count = 0
        self.faults = 0
        self.skipped = 0
        self.path_re = re.compile(args.path) if args.path else None

    def choose(self, method, target, rng_key):
        a = self.args
        with self.lock:
            self.count += 1
            n = self.count
            k = self.seen.get(rng_key, 0)
            self.seen[rng_key] = k + 1
            rng = random.Random("%d|%s|%d" % (a.seed, rng_key, k))
            eligible = (
                method in a.methods
                and (self.path_re is None or self.path_re.search(target))
                and (a.first <= 0 or n <= a.first)
                and (a.max_faults < 0 or self.faults < a.max_faults)
            )
            if eligible and self.skipped < a.skip:
                self.skipped += 1
                eligible = False
            fault = None
            if eligible and rng.random() < a.rate:
                fault = a.faults[rng.randrange(len(a.faults))]
                self.faults += 1
            return n, fault


def request_key(method, target, rng_range):
    """The request as far as the fault draw is concerned: the upload id
    (random per run) is left out so that runs repeat."""
    path, _, query = target.partition("?")
    q = [p for p in query.split("&") if p and not p.startswith("uploadId=")]
    return "%s %s?%s %s" % (method, path, "&".join(q), rng_range)


class Proxy:
    def __init__(self, args):
        self.args = args
        u = urllib.parse.urlsplit(args.upstream)
        if u.scheme != "http" or not u.hostname:
            sys.exit("faultproxy: --upstream must be http://HOST:PORT")
        self.up_addr = (u.hostname, u.port or 80)
        self.chooser = Chooser(args)
        self.out_lock = threading.Lock()

    def log(self, line):
        with self.out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def serve(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.args.port))
        ls.listen(128)
        self.log("port %d" % ls.getsockname()[1])
        while True:
            c, _ = ls.accept()
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.connection, args=(c,), daemon=True).start()

    def connection(self, client):
        conn = {"client": client, "up": None, "up_reader": None}
        reader = Reader(client)
        try:
            while True:
                raw = reader.head()
                if not raw:
                    break
                if not self.one(conn, reader, Message(raw)):
                    break
        except (Closed, OSError, ValueError, IndexError):
            pass
        finally:
            rst_close(conn["up"])
            try:
                client.close()
            except OSError:
                pass

    def upstream(self, conn):
        if conn["up"] is not None and select.select([conn["up"]], [], [], 0)[0]:
            # Readable while idle: the server closed its kept-alive end.
            self.drop_upstream(conn, reset=True)
        if conn["up"] is None:
            s = socket.create_connection(self.up_addr)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn["up"], conn["up_reader"] = s, Reader(s)
        return conn["up"], conn["up_reader"]

    def drop_upstream(self, conn, reset=False):
        (rst_close if reset else fin_close)(conn["up"])
        conn["up"] = conn["up_reader"] = None

    def one(self, conn, reader, req):
        """Handles one request; False when the client connection must close."""
        method, target = req.start.split()[0], req.start.split()[1]
        n, fault = self.chooser.choose(method, target,
                                       request_key(method, target, req.get("range")))
        if fault:
            self.log("fault %s #%d %s %s" % (fault, n, method, target))
        if fault in ERROR_BODIES:
            return self.error_answer(conn, reader, req, method, fault, n)
        return self.forward(conn, reader, req, method, target, fault, n)

    def error_answer(self, conn, reader, req, method, fault, n):
        client = conn["client"]
        status, reason, code, message = ERROR_BODIES[fault]
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
                "<Message>%s</Message><RequestId>faultproxy-%d</RequestId></Error>" %
                (code, message, n)).encode()
        expect = "100-continue" in req.get("expect").lower()
        has_body = body_length(req.framing()) != 0
        # A body announced with Expect is never asked for: answer and close
        # (the client would otherwise send it as the next request). A body
        # sent anyway is read and dropped, and the connection stays.
        close = (expect and has_body) or not req.keep_alive()
        if has_body and not expect:
            relay_body(reader, None, req.framing())
        head = ("HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n"
                "x-amz-request-id: faultproxy-%d\r\n%s\r\n" %
                (status, reason, len(body), n, "Connection: close\r\n" if close else ""))
        client.sendall(head.encode() + (b"" if method == "HEAD" else body))
        if close:
            fin_close(client, drain_s=2.0)
            return False
        return True

    def forward(self, conn, reader, req, method, target, fault, n):
        client = conn["client"]
        try:
            up, up_reader = self.upstream(conn)
            up.sendall(req.raw)
        except OSError:
            # A kept-alive upstream connection that the server closed: once more.
            self.drop_upstream(conn, reset=True)
            up, up_reader = self.upstream(conn)
            up.sendall(req.raw)
        framing = req.framing()
        blen = body_length(framing)
        expect = "100-continue" in req.get("expect").lower() and blen != 0
        if expect:
            interim = Message(up_reader.head())
            client.sendall(interim.raw)
            if not interim.start.split()[1].startswith("1"):
                # A final answer instead of 100: relay it and close both.
                relay_body(up_reader, client, response_framing(interim, method))
                self.drop_upstream(conn, reset=True)
                fin_close(client, drain_s=2.0)
                return False
        # Request body: faults against uploads strike half-way through it.
        if blen != 0 and fault in ("reset", "stall"):
            budget = (blen // 2) if blen else 64 * 1024
            relay_body(reader, up, framing, budget=budget)
            if fault == "stall":
                time.sleep(self.args.stall_seconds)
            self.drop_upstream(conn, reset=True)
            rst_close(client)
            return False
        relay_body(reader, up, framing)
        resp = Message(up_reader.head())
        while resp.start.split()[1].startswith("1"):  # a late 100 Continue
            client.sendall(resp.raw)
            resp = Message(up_reader.head())
        if fault == "slow":
            time.sleep(self.args.stall_seconds)
        rframing = response_framing(resp, method)
        rlen = body_length(rframing)
        if self.args.verbose:
            self.log("req #%d %s %s -> %s" % (n, method, target, resp.start.split()[1]))
        if fault in ("reset", "stall", "truncate"):
            if rlen == 0:
                # No body to cut: reset / stall before the answer, truncate
                # inside its headers.
                if fault == "truncate":
                    client.sendall(resp.raw[: len(resp.raw) // 2])
            else:
                client.sendall(resp.raw)
                relay_body(up_reader, client, rframing,
                           budget=(rlen // 2) if rlen else 16 * 1024)
            if fault == "stall":
                time.sleep(self.args.stall_seconds)
            self.drop_upstream(conn, reset=True)
            (fin_close if fault == "truncate" else rst_close)(client)
            return False
        client.sendall(resp.raw)
        relay_body(up_reader, client, rframing)
        if rframing[0] == "eof" or not resp.keep_alive():
            self.drop_upstream(conn)
            fin_close(client)
            return False
        return req.keep_alive()


def parse_args(argv):
    p = argparse.ArgumentParser(description="fault-injecting HTTP/1.1 reverse proxy (tests)")
    p.add_argument("--upstream", required=True, help="http://HOST:PORT of the real server")
    p.add_argument("--port", type=int, default=0, help="listening port (default: a free one)")
    p.add_argument("--rate", type=float, default=0.0, help="share of eligible requests to fault")
    p.add_argument("--faults", default=",".join(KINDS[:5]),
                   help="kinds: " + ",".join(KINDS) + " (default: all but slow and 403)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--stall-seconds", type=float, default=10.0)
    p.add_argument("--methods", default="GET,PUT,POST,HEAD,DELETE")
    p.add_argument("--path", default="", help="only targets matching this regex")
    p.add_argument("--first", type=int, default=0, help="only the first N requests (0: all)")
    p.add_argument("--skip", type=int, default=0, help="leave the first N eligible requests alone")
    p.add_argument("--max-faults", type=int, default=-1, help="at most N faults (-1: no limit)")
    p.add_argument("-v", "--verbose", action="store_true", help="log every request")
    a = p.parse_args(argv)
    a.faults = [f for f in a.faults.split(",") if f]
    for f in a.faults:
        if f not in KINDS:
            p.error("unknown fault %r (want %s)" % (f, ",".join(KINDS)))
    if not a.faults:
        p.error("--faults is empty")
    a.methods = set(m.strip().upper() for m in a.methods.split(",") if m.strip())
    return a


def main():
    args = parse_args(sys.argv[1:])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    Proxy(args).serve()


if __name__ == "__main__":
    main()
