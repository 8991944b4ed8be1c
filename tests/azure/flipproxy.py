#!/usr/bin/env python3
"""flipproxy.py - a proxy that damages one upload in transit, for t0283.

  flipproxy.py UPSTREAM_PORT   listens on 127.0.0.1 at a free port, prints
      "port N"; forwards every request to 127.0.0.1:UPSTREAM_PORT unchanged,
      except that the first PUT whose body is at least 64 KiB gets one byte
      of its body flipped (and prints "flipped METHOD PATH"). Headers,
      Content-MD5 included, are forwarded as sent.
"""
import http.client
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM = int(sys.argv[1])
flipped = False


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def forward(self):
        global flipped
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        if self.command == "PUT" and n >= 65536 and not flipped:
            flipped = True
            body = bytearray(body)
            body[n // 2] ^= 0x01
            body = bytes(body)
            print("flipped", self.command, self.path, flush=True)
        up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
        hdrs = {k: v for k, v in self.headers.items()}
        up.request(self.command, self.path, body=body, headers=hdrs)
        r = up.getresponse()
        data = r.read()
        self.send_response_only(r.status, r.reason)
        head = self.command == "HEAD"  # its Content-Length is the blob's
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection") and (
                    head or k.lower() != "content-length"):
                self.send_header(k, v)
        if not head:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        up.close()

    do_GET = do_PUT = do_HEAD = do_DELETE = forward


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print("port", srv.server_address[1], flush=True)
srv.serve_forever()
