#!/usr/bin/env python3
"""imds.py - a stand-in for the Azure VM's managed identity endpoint and a
blob endpoint that records what it is sent, for t0282.

  imds.py DIR   listens on 127.0.0.1 at a free port, writes "port N" to
                stdout. GET /metadata/identity/oauth2/token answers a token
                the documented way (api-version=2018-02-01, resource=
                https://storage.azure.com/, header Metadata: true; else 400)
                and counts it in DIR/tokens; any other request is recorded
                in DIR/requests (method, path, Authorization header) and
                answered like an empty container: an empty listing for
                comp=list, 404 BlobNotFound otherwise.
"""
import json
import os
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
TOKEN = "eyJ0eXAiOiJKV1QifQ.test-token.sig"


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def answer(self, status, body, ctype="application/xml", extra=None):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path == "/metadata/identity/oauth2/token":
            ok = (self.headers.get("Metadata") == "true" and q.get("api-version") == ["2018-02-01"]
                  and q.get("resource") == ["https://storage.azure.com/"])
            if not ok:
                return self.answer(400, '{"error":"invalid_request"}', "application/json")
            with open(os.path.join(DIR, "tokens"), "a") as f:
                f.write("token %s\n" % q.get("client_id", [""])[0])
            exp = str(int(time.time()) + 3600)
            return self.answer(200, json.dumps({
                "access_token": TOKEN, "expires_on": exp, "resource": "https://storage.azure.com/",
                "token_type": "Bearer"}), "application/json")
        with open(os.path.join(DIR, "requests"), "a") as f:
            f.write("%s %s %s\n" % (self.command, u.path, self.headers.get("Authorization", "-")))
        if q.get("comp") == ["list"]:
            return self.answer(200, '<?xml version="1.0" encoding="utf-8"?><EnumerationResults>'
                               '<Blobs/><NextMarker/></EnumerationResults>')
        return self.answer(404, "", extra={"x-ms-error-code": "BlobNotFound"})

    do_HEAD = do_GET


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print("port", srv.server_address[1], flush=True)
srv.serve_forever()
