#!/usr/bin/env python3
"""A cloud metadata service for spotrun's tests: AWS IMDSv2, GCP metadata
and Azure Scheduled Events, as each provider documents them.

    server.py --cloud aws|gcp|azure --port-file FILE [--azure-first-delay S]

Binds 127.0.0.1 on a free port and writes the port to FILE. Only the chosen
cloud answers; the others' paths are 404, so `--notice auto` can be tested
by pointing every endpoint at one server.

Provider protocol (what spotrun must get right):
  AWS    PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds
         (1..21600, else 400) returns a token; GETs under /latest/meta-data/
         need X-aws-ec2-metadata-token (missing, wrong or expired: 401)
         unless IMDSv1 is enabled. spot/instance-action and
         events/recommendations/rebalance are 404 until scheduled.
  GCP    every request needs "Metadata-Flavor: Google" (403 without) and
         answers with that header and an ETag; ?wait_for_change=true
         [&last_etag=E][&timeout_sec=N] holds the request until the value
         differs from E (or from the current value) or the timeout.
  Azure  every request needs "Metadata: true" and an api-version (400
         without); GET /metadata/scheduledevents lists events; POST with
         {"StartRequests":[{"EventId":...}]} approves them.

Controls for tests (not part of any provider's protocol), POST unless noted:
  /_control/notice?in=S[&at=UNIX][&action=A][&type=Preempt][&resource=NAME]
        schedule the cloud's preemption notice, visible from unix time AT
        (default now), with a deadline S seconds after it becomes visible
        (AWS time, Azure NotBefore; GCP's preempted just turns TRUE)
  /_control/rebalance                 AWS rebalance recommendation
  /_control/maintenance?value=V       GCP maintenance-event
  /_control/withdraw                  Azure: the events disappear
  /_control/clear                     no notice any more
  /_control/malformed?mode=M          notice endpoints answer garbage | huge |
                                      wrongtype | html (a proxy's error page,
                                      text/html) | slowloris (a valid answer
                                      dribbled one byte per 0.5 s) | ok (the
                                      normal answers again)
  /_control/token-hang?on=1           AWS token PUT never answers (hop limit)
  /_control/revoke-tokens             AWS: every IMDSv2 token issued so far expires
  /_control/imdsv1?on=1               AWS: tokenless GETs allowed
  /_control/gcp-no-etag?on=1          GCP: answers carry no ETag
  /_control/placement?[instance_type=T][&zone=Z][&region=R][&hang=1]
        where the instance runs (defaults per cloud in PLACEMENT): AWS
        answers each as is; GCP answers machine-type and zone as resource
        paths (projects/N/machineTypes/T, projects/N/zones/Z); Azure's
        compute document has vmSize T, location R and zone Z ("" for a VM
        without zones). Values are sent as given (hostile ones too); hang=1:
        the placement answers never come (30 s)
  GET /_control/acks                  JSON list of approved Azure EventIds
  GET /_control/stats                 JSON request counts per method and path
"""
import argparse
import email.utils
import hashlib
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VM_NAME = "spotrun-test-vm"
PROJECT = "123456789012"
PLACEMENT_PATHS = {
    "/latest/meta-data/instance-type", "/latest/meta-data/placement/availability-zone",
    "/latest/meta-data/placement/region", "/computeMetadata/v1/instance/machine-type",
    "/computeMetadata/v1/instance/zone", "/metadata/instance/compute",
    "/metadata/instance/compute/vmSize",
}
# Where each cloud's test instance runs (the placement control changes it).
PLACEMENT = {
    "aws": {"instance_type": "g5.xlarge", "zone": "us-east-1a", "region": "us-east-1"},
    "gcp": {"instance_type": "a2-highgpu-1g", "zone": "us-central1-a", "region": ""},
    "azure": {"instance_type": "Standard_NC6s_v3", "zone": "1", "region": "eastus"},
}


class Html(bytes):
    """A body served as text/html (what a proxy's error page looks like)."""


class Slow(bytes):
    """A body sent one byte per 0.5 s (slow-loris)."""


class State:
    def __init__(self, cloud, first_delay):
        self.cloud = cloud
        self.cond = threading.Condition()
        self.tokens = {}  # token -> expiry (monotonic)
        self.imdsv1 = False
        self.token_hang = False
        self.gcp_no_etag = False
        self.malformed = "ok"
        self.notice = None  # dict(visible, deadline, action, type, resource, id)
        self.rebalance = None  # wall time
        self.maintenance = "NONE"
        self.acks = []
        self.stats = {}
        self.incarnation = 1
        self.first_delay = first_delay
        self.first_done = False
        self.placement = dict(PLACEMENT[cloud])
        self.placement_hang = False

    def place(self, key):
        return self.placement[key]

    def visible_notice(self):
        n = self.notice
        return n if n and time.time() >= n["visible"] else None

    def changed(self):
        self.incarnation += 1
        self.cond.notify_all()


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def rfc1123(t):
    return email.utils.formatdate(t, usegmt=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the body waits
    # for the client's delayed ACK (40 ms), which no real server adds.
    disable_nagle_algorithm = True
    server_version = "metadata-test"

    def log_message(self, fmt, *args):  # quiet
        pass

    @property
    def st(self):
        return self.server.state

    def reply(self, code, body=b"", ctype="text/plain", headers=None):
        if isinstance(body, str):
            body = body.encode()
        with self.st.cond:
            key = "status %d" % code
            self.st.stats[key] = self.st.stats.get(key, 0) + 1
        self.send_response(code)
        self.send_header("Content-Type", "text/html" if isinstance(body, Html) else ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        if not isinstance(body, Slow):
            self.wfile.write(body)
            return
        try:  # slow-loris: the client must give up on its own
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(0.5)
        except OSError:
            pass

    def count(self):
        key = "%s %s" % (self.command, urllib.parse.urlsplit(self.path).path)
        with self.st.cond:
            self.st.stats[key] = self.st.stats.get(key, 0) + 1

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def dispatch(self):
        self.count()
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        if u.path.startswith("/_control/"):
            return self.control(u.path[len("/_control/"):], q)
        if self.st.placement_hang and u.path in PLACEMENT_PATHS:
            time.sleep(30)  # the client has given up long before
            return
        handler = {"aws": self.aws, "gcp": self.gcp, "azure": self.azure}[self.st.cloud]
        return handler(u.path, q)

    # ---- controls ---------------------------------------------------------

    def control(self, what, q):
        st = self.st
        self.body()
        with st.cond:
            if what == "notice":
                visible = float(q.get("at", time.time()))
                st.notice = {
                    "visible": visible,
                    "deadline": visible + float(q.get("in", "120")),
                    "action": q.get("action", "terminate"),
                    "type": q.get("type", "Preempt"),
                    "resource": q.get("resource", VM_NAME),
                    "id": q.get("id", "602d9444-d2cd-49c7-8624-8643e7171297"),
                }
                st.changed()
                # Wake long polls when the notice becomes visible.
                delay = visible - time.time()
                if delay > 0:  # a hair late: an early wake-up would see nothing
                    threading.Timer(delay + 0.002, self.wake).start()
            elif what == "rebalance":
                st.rebalance = time.time()
            elif what == "maintenance":
                st.maintenance = q.get("value", "TERMINATE_ON_HOST_MAINTENANCE")
                st.changed()
            elif what in ("withdraw", "clear"):
                st.notice = None
                st.rebalance = None
                st.changed()
            elif what == "malformed":
                st.malformed = q.get("mode", "garbage")
                st.changed()  # long polls answer at once
            elif what == "revoke-tokens":  # as if every token expired now
                st.tokens.clear()
            elif what == "token-hang":
                st.token_hang = q.get("on", "1") == "1"
            elif what == "imdsv1":
                st.imdsv1 = q.get("on", "1") == "1"
            elif what == "gcp-no-etag":
                st.gcp_no_etag = q.get("on", "1") == "1"
            elif what == "placement":
                for k in ("instance_type", "zone", "region"):
                    if k in q:
                        st.placement[k] = q[k]
                st.placement_hang = q.get("hang", "0") == "1"
            elif what == "acks":
                return self.reply(200, json.dumps(st.acks), "application/json")
            elif what == "stats":
                return self.reply(200, json.dumps(st.stats), "application/json")
            else:
                return self.reply(404, "no such control\n")
        return self.reply(200, "ok\n")

    def wake(self):
        with self.st.cond:
            self.st.changed()

    def malformed_body(self):
        mode = self.st.malformed
        if mode == "html":
            return Html(b"<html><body><h1>502 Bad Gateway</h1></body></html>\n")
        if mode == "slowloris":
            return Slow(json.dumps({"action": "terminate", "time": iso(time.time() + 60)}).encode())
        if mode == "garbage":
            return b'{"action": "terminate", "time": '  # truncated JSON
        if mode == "huge":
            return b"[" + b"0," * (2 * 1024 * 1024) + b"0]"
        if mode == "wrongtype":
            return json.dumps({"action": 5, "time": ["x"], "Events": "none",
                               "DocumentIncarnation": "x"}).encode()
        return None

    # ---- AWS IMDSv2 ------------------------------------------------------

    def aws(self, path, q):
        st = self.st
        if path == "/latest/api/token" and self.command == "PUT":
            self.body()
            if self.headers.get("X-Forwarded-For"):
                return self.reply(403, "Forbidden\n")
            if st.token_hang:  # the answer is lost one hop short of the container
                time.sleep(30)
                return
            try:
                ttl = int(self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", ""))
            except ValueError:
                ttl = 0
            if not 1 <= ttl <= 21600:
                return self.reply(400, "Bad Request\n")
            token = secrets.token_urlsafe(40)
            with st.cond:
                st.tokens[token] = time.monotonic() + ttl
            return self.reply(200, token, headers={"X-aws-ec2-metadata-token-ttl-seconds": str(ttl)})
        if not path.startswith("/latest/meta-data/") or self.command != "GET":
            return self.reply(404, "Not Found\n")
        token = self.headers.get("X-aws-ec2-metadata-token")
        with st.cond:
            ok = token is not None and st.tokens.get(token, 0) > time.monotonic()
            if token is None and st.imdsv1:
                ok = True
            notice = st.visible_notice()
            rebalance = st.rebalance
        if not ok:
            return self.reply(401, "Unauthorized\n")
        sub = path[len("/latest/meta-data/"):]
        if sub == "instance-id":
            return self.reply(200, "i-0123456789abcdef0")
        if sub == "instance-type":
            return self.reply(200, st.place("instance_type"))
        if sub == "placement/availability-zone":
            return self.reply(200, st.place("zone"))
        if sub == "placement/region":
            return self.reply(200, st.place("region"))
        if sub == "spot/instance-action":
            bad = self.malformed_body()
            if bad is not None:
                return self.reply(200, bad, "application/json")
            if not notice:
                return self.reply(404, "Not Found\n")
            doc = {"action": notice["action"], "time": iso(notice["deadline"])}
            return self.reply(200, json.dumps(doc), "application/json")
        if sub == "events/recommendations/rebalance":
            if not rebalance:
                return self.reply(404, "Not Found\n")
            return self.reply(200, json.dumps({"noticeTime": iso(rebalance)}), "application/json")
        return self.reply(404, "Not Found\n")

    # ---- GCP ---------------------------------------------------------------

    def gcp_value(self, key):
        st = self.st
        if key == "instance/preempted":
            return "TRUE" if st.visible_notice() else "FALSE"
        if key == "instance/maintenance-event":
            return st.maintenance
        if key == "instance/id":
            return "4520031799277581759"
        if key == "instance/machine-type":  # the full resource name, as GCP answers
            return "projects/%s/machineTypes/%s" % (PROJECT, st.place("instance_type"))
        if key == "instance/zone":
            return "projects/%s/zones/%s" % (PROJECT, st.place("zone"))
        return None

    def gcp(self, path, q):
        st = self.st
        flavor = {"Metadata-Flavor": "Google"}
        if self.headers.get("Metadata-Flavor") != "Google" or self.headers.get("X-Forwarded-For"):
            return self.reply(403, "Missing Metadata-Flavor:Google header.\n", headers=flavor)
        if not path.startswith("/computeMetadata/v1/"):
            return self.reply(404, "Not Found\n", headers=flavor)
        key = path[len("/computeMetadata/v1/"):]
        etag = lambda v: hashlib.md5(v.encode()).hexdigest()[:16]
        with st.cond:
            value = self.gcp_value(key)
            if value is None:
                return self.reply(404, "Not Found\n", headers=flavor)
            if q.get("wait_for_change") == "true":
                since = q.get("last_etag") or etag(value)
                limit = time.monotonic() + min(float(q.get("timeout_sec", "3600")), 3600)
                hurry = key == "instance/preempted"  # malformed answers come at once
                while (etag(value) == since and not (hurry and st.malformed != "ok")
                       and time.monotonic() < limit):
                    st.cond.wait(min(0.02, limit - time.monotonic()))
                    value = self.gcp_value(key)
            bad = self.malformed_body() if key == "instance/preempted" else None
        if bad is not None:
            return self.reply(200, bad, headers={**flavor, "ETag": "bad"})
        if st.gcp_no_etag:  # a metadata server (or proxy) that sends no ETag
            return self.reply(200, value, headers=flavor)
        return self.reply(200, value, headers={**flavor, "ETag": etag(value)})

    # ---- Azure -------------------------------------------------------------

    def azure(self, path, q):
        st = self.st
        if self.headers.get("Metadata") != "true" or self.headers.get("X-Forwarded-For"):
            return self.reply(400, json.dumps({"error": "Bad request. Required metadata header not specified"}), "application/json")
        if "api-version" not in q:
            return self.reply(400, json.dumps({"error": "Bad request. api-version was not specified"}), "application/json")
        if path == "/metadata/instance/compute/name":
            return self.reply(200, VM_NAME)
        if path == "/metadata/instance/compute/vmSize" and q.get("format") == "text":
            return self.reply(200, st.place("instance_type"))
        if path == "/metadata/instance/compute":  # a part of the real document
            doc = {"azEnvironment": "AzurePublicCloud", "location": st.place("region"),
                   "name": VM_NAME, "osType": "Linux", "priority": "Spot",
                   "resourceId": "/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/"
                                 "resourceGroups/rg/providers/Microsoft.Compute/"
                                 "virtualMachines/" + VM_NAME,
                   "tags": "", "vmId": "02aab8a4-74ef-476e-8182-f6d2ba4166a6",
                   "vmSize": st.place("instance_type"), "zone": st.place("zone")}
            return self.reply(200, json.dumps(doc), "application/json")
        if path != "/metadata/scheduledevents":
            return self.reply(404, json.dumps({"error": "Not found"}), "application/json")
        if self.command == "POST":
            try:
                doc = json.loads(self.body() or b"null")
                ids = [r["EventId"] for r in doc["StartRequests"]]
            except (ValueError, KeyError, TypeError):
                return self.reply(400, json.dumps({"error": "Bad request"}), "application/json")
            with st.cond:
                st.acks.extend(ids)
                if st.notice and st.notice["id"] in ids:
                    st.notice["started"] = True
            return self.reply(200, "")
        if not st.first_done:  # the service warms up on the first call
            time.sleep(st.first_delay)
            st.first_done = True
        with st.cond:
            bad = self.malformed_body()
            n = st.visible_notice()
            events = []
            if n:
                events.append({
                    "EventId": n["id"],
                    "EventType": n["type"],
                    "ResourceType": "VirtualMachine",
                    "Resources": [n["resource"]],
                    "EventStatus": "Started" if n.get("started") else "Scheduled",
                    "NotBefore": "" if n.get("started") else rfc1123(n["deadline"]),
                    "Description": "The virtual machine is being preempted.",
                    "EventSource": "Platform",
                    "DurationInSeconds": -1,
                })
            doc = {"DocumentIncarnation": st.incarnation, "Events": events}
        if bad is not None:
            return self.reply(200, bad, "application/json")
        return self.reply(200, json.dumps(doc), "application/json")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients that hang up early (probes, a stopping spotrun) are normal.
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cloud", required=True, choices=["aws", "gcp", "azure"])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--azure-first-delay", type=float, default=0.0)
    a = ap.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    srv.state = State(a.cloud, a.azure_first_delay)
    with open(a.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    import os
    os.rename(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
