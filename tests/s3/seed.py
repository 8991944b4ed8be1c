#!/usr/bin/env python3
"""seed.py SRC DST - copies the file store SRC into the S3 test server's
data directory DST (<data>/<bucket>/<prefix>) in the server's own layout
(@20minutes/s3rver's filesystem store: <key>._S3rver_object, with its
.md5 and ._S3rver_metadata.json beside it), so that a benchmark or a test
of a large store measures the reads, not ~50,000 uploads one PUT at a
time. The server may be running: it reads its directory at each request.
"""
import hashlib
import json
import os
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    for d, _, files in os.walk(src):
        rel = os.path.relpath(d, src)
        out = os.path.normpath(os.path.join(dst, rel))
        os.makedirs(out, exist_ok=True)
        for f in files:
            if f.startswith("."):  # the file store's temp and lock files
                continue
            data = open(os.path.join(d, f), "rb").read()
            base = os.path.join(out, f + "._S3rver_object")
            open(base, "wb").write(data)
            open(base + ".md5", "w").write(hashlib.md5(data).hexdigest())
            json.dump({"content-type": "binary/octet-stream"},
                      open(os.path.join(out, f + "._S3rver_metadata.json"), "w"))


if __name__ == "__main__":
    main()
