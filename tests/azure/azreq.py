#!/usr/bin/env python3
"""azreq.py - signed Azure Blob requests for the tests' setup and checks,
written from the documented Shared Key rules independently of spotrun's C
signer (a second implementation: a bug in one does not hide in both).

  azreq.py METHOD PATH [QUERY] [BODY_FILE]
      PATH is /container[/blob]; QUERY like "restype=container"; prints the
      status line, then the body. Env: AZ_ENDPOINT (http://127.0.0.1:PORT/
      devstoreaccount1), AZ_ACCOUNT, AZ_KEY (base64), AZ_HEADERS (extra
      "Name: value" lines, e.g. "If-Match: ...").
  azreq.py sas [PERMISSIONS]
      prints an account SAS token (blob service, version 2019-12-12, an
      hour long) signed with AZ_KEY.
"""
import base64
import hashlib
import hmac
import os
import sys
import urllib.parse
import urllib.request
from email.utils import formatdate


def canon_resource(account, path, query):
    out = "/" + account + path
    params = {}
    for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
        params.setdefault(k.lower(), []).append(v)
    for k in sorted(params):
        out += "\n" + k + ":" + ",".join(sorted(params[k]))
    return out


def sign(method, url_path, query, headers, body_len, account, key):
    ms = sorted((k.lower(), v.strip()) for k, v in headers.items() if k.lower().startswith("x-ms-"))
    std = {k.lower(): v for k, v in headers.items()}
    sts = "\n".join([
        method, "", "", str(body_len) if body_len else "", "", std.get("content-type", ""),
        "", "", std.get("if-match", ""), std.get("if-none-match", ""), "", std.get("range", ""),
    ]) + "\n" + "".join(f"{k}:{v}\n" for k, v in ms) + canon_resource(account, url_path, query)
    mac = hmac.new(base64.b64decode(key), sts.encode(), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


def account_sas(perms):
    import datetime
    account, key = os.environ["AZ_ACCOUNT"], os.environ["AZ_KEY"]
    exp = (datetime.datetime.utcnow() + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    sts = "\n".join([account, perms, "b", "sco", "", exp, "", "", "2019-12-12", ""])
    sig = base64.b64encode(hmac.new(base64.b64decode(key), sts.encode(), hashlib.sha256).digest())
    return urllib.parse.urlencode({"sv": "2019-12-12", "ss": "b", "srt": "sco", "sp": perms,
                                   "se": exp, "sig": sig.decode()})


def main():
    if sys.argv[1] == "sas":
        print(account_sas(sys.argv[2] if len(sys.argv) > 2 else "rwdlac"))
        return 0
    method, path = sys.argv[1], sys.argv[2]
    query = sys.argv[3] if len(sys.argv) > 3 else ""
    body = open(sys.argv[4], "rb").read() if len(sys.argv) > 4 else b""
    endpoint = os.environ["AZ_ENDPOINT"].rstrip("/")
    account, key = os.environ["AZ_ACCOUNT"], os.environ["AZ_KEY"]
    base_path = urllib.parse.urlparse(endpoint).path
    headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": "2021-08-06"}
    if method == "PUT" and "comp=" not in query and "restype=" not in query:
        headers["x-ms-blob-type"] = "BlockBlob"
    if method == "PUT":
        headers["Content-Type"] = "application/octet-stream"  # urllib would add its own
    for line in os.environ.get("AZ_HEADERS", "").splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip()] = v.strip()
    url_path = base_path + urllib.parse.quote(path)
    headers["Authorization"] = "SharedKey %s:%s" % (
        account, sign(method, url_path, query, headers, len(body), account, key))
    if method in ("PUT", "POST"):
        headers["Content-Length"] = str(len(body))
    url = endpoint + urllib.parse.quote(path) + ("?" + query if query else "")
    req = urllib.request.Request(url, data=body if method in ("PUT", "POST") else None,
                                 method=method, headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            status, data, hdrs = r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        status, data, hdrs = e.code, e.read(), e.headers
    print(status, hdrs.get("ETag", ""), hdrs.get("x-ms-error-code", ""))
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    return 0 if 200 <= status < 300 else 1


if __name__ == "__main__":
    sys.exit(main())
