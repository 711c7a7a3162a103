#!/usr/bin/env python3
"""A stand-in for the partner's API in the rio-ordered example.

  mock_rio.py [--port 9090] [--port-file FILE] [--log FILE]

Takes structured-mode CloudEvents (application/cloudevents+json) POSTed to
/rio/<institution> and answers like a real partner would, steered by the
event's data.simulate:

  (absent)            200: processed
  "unavailable-once"  503 on the first attempt of this event, then 200
                      (a retryable error: the bridge retries later)
  "invalid"           400 with a problem+json body (a definitive error: the
                      bridge dead-letters the event at once)

Every attempt is appended to --log as one JSON line (time, institution, id,
idempotency key, answer), so a test can check the order of deliveries.
Listens on 127.0.0.1 only.
"""
import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

seen = set()
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    log_path = None

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        parts = self.path.split("/")
        if len(parts) != 3 or parts[1] != "rio" or not parts[2]:
            return self.answer(404, {"title": "unknown path"})
        try:
            event = json.loads(body)
            ev_id = event["id"]
        except (ValueError, KeyError, TypeError):
            return self.answer(400, {"title": "not a structured CloudEvent"})
        simulate = (event.get("data") or {}).get("simulate")
        with lock:
            first = ev_id not in seen
            seen.add(ev_id)
        if simulate == "invalid":
            status = 400
            reply = {"title": "Bad Request",
                     "detail": "opleidingseenheid: required field missing"}
        elif simulate == "unavailable-once" and first:
            status = 503
            reply = {"title": "Service Unavailable"}
        else:
            status = 200
            reply = {"status": "done", "id": ev_id}
        record = {"t": time.time(), "institution": parts[2], "id": ev_id,
                  "key": self.headers.get("Idempotency-Key"),
                  "status": status}
        if self.log_path:
            with lock, open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        self.answer(status, reply)

    def answer(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        ctype = "application/json" if status < 400 else \
            "application/problem+json"
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):  # keep the terminal quiet
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=9090)
    p.add_argument("--port-file")
    p.add_argument("--log")
    a = p.parse_args()
    Handler.log_path = a.log
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(srv.server_address[1]))
        os.replace(a.port_file + ".tmp", a.port_file)
    print(f"mock RIO on http://127.0.0.1:{srv.server_address[1]}/rio/",
          flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
