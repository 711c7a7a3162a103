#!/usr/bin/env python3
"""A partner's webhook endpoint that verifies Standard Webhooks signatures.

  webhook_receiver.py [--port 9091] [--port-file FILE] [--log FILE]
                      [--fail-first N] [--tolerance SECONDS]
  webhook_receiver.py --self-test

The secret (whsec_<base64>) comes from the environment variable
WEBHOOK_SECRET; several secrets separated by spaces are all accepted (key
rotation). A POST is processed only when:

  1. webhook-id, webhook-timestamp and webhook-signature are present;
  2. webhook-timestamp is within --tolerance (default 300 s) of now;
  3. one of the "v1,<base64>" signatures in webhook-signature equals
     base64(HMAC-SHA256(secret, "<webhook-id>.<webhook-timestamp>.<body>"))
     for one of the secrets (compared in constant time).

Otherwise it answers 401 and the sender will not retry into success. A
webhook-id seen before is answered 200 again without processing twice (the
sender keeps the id across retries: at-least-once delivery, exactly-once
processing). --fail-first N answers 503 to the first N valid requests, to
watch the sender's retry schedule. Every request is appended to --log as one
JSON line. Listens on 127.0.0.1 only.

--self-test checks the verification against the worked example of the
meemoo webhook guide and exits.
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def secret_bytes(secret):
    if not secret.startswith("whsec_"):
        raise ValueError("a Standard Webhooks secret starts with whsec_")
    return base64.b64decode(secret[len("whsec_"):])


def sign(secret, msg_id, timestamp, body):
    mac = hmac.new(secret_bytes(secret),
                   f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def verify(secrets, headers, body, now, tolerance):
    """Returns None when the request is authentic, else the reason."""
    msg_id = headers.get("webhook-id")
    ts = headers.get("webhook-timestamp")
    sigs = headers.get("webhook-signature")
    if not msg_id or not ts or not sigs:
        return "missing webhook headers"
    try:
        ts_int = int(ts)
    except ValueError:
        return "bad webhook-timestamp"
    if tolerance is not None and abs(now - ts_int) > tolerance:
        return "webhook-timestamp outside the tolerance"
    for secret in secrets:
        expected = sign(secret, msg_id, ts, body)
        for candidate in sigs.split(" "):
            if hmac.compare_digest(candidate.encode(), expected.encode()):
                return None
    return "no valid signature"


def self_test():
    # The worked example of the meemoo webhook guide (seed 002).
    secret = "whsec_YWxvbmd3ZWJob29rbWVlbW9vc2VjcmV0"
    body = (b'{"type": "meemoo.sip.archived", "timestamp": '
            b'"2025-09-03T20:26:10.344522Z", "data": {"correlation_id": '
            b'"843e9ba457593d0edf69a24baa0babf3", "outcome": "success", '
            b'"pid": "kdleipkyuj"}}')
    headers = {"webhook-id": "msg_333a3NGSYKk1vyFtMgj9Qy8gm3y",
               "webhook-timestamp": "1758548009",
               "webhook-signature":
                   "v1,cVueLJYV5JY6qXHw3+MIHbZCPHHnX7N7jjaebaI2+5o="}
    ok = verify([secret], headers, body, 1758548009, 300) is None
    tampered = verify([secret], headers, body.replace(b"success", b"failure"),
                      1758548009, 300) is not None
    stale = verify([secret], headers, body, 1758548009 + 301, 300) is not None
    print(f"self-test: example verifies {ok}, tampered body refused "
          f"{tampered}, stale timestamp refused {stale}")
    return 0 if ok and tampered and stale else 1


class Handler(BaseHTTPRequestHandler):
    secrets = []
    tolerance = 300
    fail_first = 0
    log_path = None
    processed = set()
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        why = verify(self.secrets, headers, body, int(time.time()),
                     self.tolerance)
        msg_id = headers.get("webhook-id")
        record = {"t": time.time(), "webhook_id": msg_id,
                  "webhook_timestamp": headers.get("webhook-timestamp"),
                  "verified": why is None}
        if why:
            status, reply = 401, {"title": "Unauthorized", "detail": why}
        else:
            with self.lock:
                duplicate = msg_id in Handler.processed
                fail = not duplicate and Handler.fail_first > 0
                if fail:
                    Handler.fail_first -= 1
                elif not duplicate:
                    Handler.processed.add(msg_id)
            event = json.loads(body)
            record.update(event_id=event.get("id"), duplicate=duplicate)
            if fail:
                status, reply = 503, {"title": "Service Unavailable"}
            else:
                # Process the event here: exactly once per webhook-id.
                status, reply = 200, {"received": event.get("id")}
        record["status"] = status
        if self.log_path:
            with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        out = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, fmt, *args):
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=9091)
    p.add_argument("--port-file")
    p.add_argument("--log")
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--tolerance", type=int, default=300)
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    secrets = os.environ.get("WEBHOOK_SECRET", "").split()
    if not secrets:
        p.error("set WEBHOOK_SECRET to the shared whsec_ secret")
    for s in secrets:
        secret_bytes(s)  # fail now on a malformed secret
    Handler.secrets, Handler.tolerance = secrets, a.tolerance
    Handler.fail_first, Handler.log_path = a.fail_first, a.log
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(srv.server_address[1]))
        os.replace(a.port_file + ".tmp", a.port_file)
    print(f"webhook receiver on http://127.0.0.1:{srv.server_address[1]}/",
          flush=True)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
