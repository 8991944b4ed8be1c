#!/usr/bin/env python3
"""creds_server.py - a test credential server for spotrun's S3 tests.

Speaks two documented AWS protocols on 127.0.0.1 (free port, printed as
"port N" on stdout once listening):

  EC2 IMDSv2:  PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds
               -> a session token; GET /latest/meta-data/iam/security-credentials/
               -> the role name; GET .../security-credentials/ROLE -> JSON.
               Every GET without a valid X-aws-ec2-metadata-token is 401.
  container:   GET /container-creds with "Authorization: TOKEN" -> JSON.

The JSON carries ACCESS_KEY / SECRET (argv 1 and 2) and an Expiration
EXPIRES seconds ahead (argv 3). Each credential fetch is appended to the
file LOG (argv 4) as "imds ROLE" or "container", so tests can count them.

usage: creds_server.py ACCESS_KEY SECRET EXPIRES LOG [AUTH_TOKEN]
"""
import datetime
import http.server
import json
import secrets
import sys

KEY, SECRET, EXPIRES, LOG = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
AUTH = sys.argv[5] if len(sys.argv) > 5 else "container-secret-token"
ROLE = "spotrun-test-role"
TOKENS = set()


def creds_json():
    exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=EXPIRES)
    return json.dumps({
        "Code": "Success",
        "Type": "AWS-HMAC",
        "AccessKeyId": KEY,
        "SecretAccessKey": SECRET,
        "Token": "test-session-token-" + secrets.token_hex(8),
        "Expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }).encode()


def log(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body=b"", ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        if self.path != "/latest/api/token":
            return self.reply(404)
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return self.reply(400, b"missing or invalid X-aws-ec2-metadata-token-ttl-seconds")
        tok = secrets.token_urlsafe(32)
        TOKENS.add(tok)
        self.reply(200, tok.encode())

    def do_GET(self):
        if self.path == "/container-creds":
            if self.headers.get("Authorization") != AUTH:
                return self.reply(403, b"bad authorization")
            log("container")
            return self.reply(200, creds_json(), "application/json")
        if not self.path.startswith("/latest/"):
            return self.reply(404)
        if self.headers.get("X-aws-ec2-metadata-token") not in TOKENS:
            return self.reply(401)
        if self.path == "/latest/meta-data/placement/region":
            return self.reply(200, b"eu-west-3")
        base = "/latest/meta-data/iam/security-credentials/"
        if self.path == base:
            return self.reply(200, ROLE.encode())
        if self.path == base + ROLE:
            log("imds " + ROLE)
            return self.reply(200, creds_json(), "application/json")
        return self.reply(404)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
