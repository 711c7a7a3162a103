#!/usr/bin/env python3
"""cebridge talks to cebridge: bridge A's webhook sink -> bridge B's
intermediary, both real `cebridge run` processes on loopback.

  test_bridge_interop.py BIN_DIR PLUGIN_DIR MODE [fault ...]

MODE is A's sink mode (binary, structured, batch); each run covers it
unsigned and signed (Standard Webhooks), always with an Idempotency-Key (B
requires one). The faults, each applied while events flow:
  submit503  B's store cannot grow (its file size limit set to 0 with
             prlimit, as a full disk): B answers 503 at submit; then the
             space comes back and B is restarted, as its log asks (an
             outcome B could not record is retried after a restart)
  cut        a TCP proxy between A and B closes A's connection as soon as
             B's answer arrives (B has committed, A never sees the 202)
  restartB   B killed with SIGKILL and started again on the same store
  killA      A killed with SIGKILL and started again on the same store
Every event posted to A (retried by the producer until A answered 202)
must end exactly once in B's journal, read back from B's pull queue, and A
must dead-letter nothing. All waits have deadlines; no timing is asserted.
"""
import base64
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

BIN, PLUGINS, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
FAULTS = sys.argv[4:] or ["submit503", "cut", "restartB", "killA"]
TOKEN = "interop-admin-token"
SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
EVENTS_PER_PHASE = 12
DEADLINE_S = 40  # per wait; the whole run stays well under it


class Fail(Exception):
    pass


T0 = time.monotonic()


def trace(msg):
    if os.environ.get("INTEROP_TRACE"):
        print(f"{time.monotonic() - T0:7.2f} {msg}", flush=True)


def wait_until(what, pred, timeout=DEADLINE_S):
    trace("wait " + what)
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise Fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def http(method, url, body=None, headers=None, timeout=10):
    """(status, body text); status 0 on a transport error."""
    req = urllib.request.Request(url, data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (OSError, urllib.error.URLError):
        return 0, ""


class Proxy:
    """A TCP relay from a fixed port to B's current port. While `cut` > 0,
    a connection whose first answer bytes arrive from B is closed on both
    sides instead (B committed, A sees the connection drop)."""

    def __init__(self, target_port):
        self.target = target_port  # a function: B's port now
        self.cut = 0
        self.cuts_done = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.closing = False
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while not self.closing:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        try:
            b = socket.create_connection(("127.0.0.1", self.target()), 5)
        except OSError:
            c.close()
            return
        b.settimeout(None)
        threading.Thread(target=self.pump, args=(c, b), daemon=True).start()
        try:
            while True:
                data = b.recv(65536)
                if not data:
                    break
                with self.lock:
                    drop = self.cut > 0
                    if drop:
                        self.cut -= 1
                        self.cuts_done += 1
                if drop:
                    # RST (linger 0), not FIN: the answer is lost for
                    # certain; shutdown first wakes the pump's recv, so
                    # that the close really releases the socket
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    try:
                        c.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    break
                c.sendall(data)
        except OSError:
            pass
        # shutdown first: the pump thread's recv holds the socket open
        # past close() otherwise, and A would wait for its timeout
        for s in (c, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    @staticmethod
    def pump(c, b):
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self):
        self.closing = True
        self.sock.close()


class Bridge:
    """One `cebridge run` with its config directory and store under dir."""

    def __init__(self, name, dir, conf):
        self.name, self.dir = name, dir
        self.conf = os.path.join(dir, "bridge.d")
        os.makedirs(self.conf, exist_ok=True)
        with open(os.path.join(self.conf, "10.conf"), "w") as f:
            f.write(conf)
        self.proc = None
        self.log = open(os.path.join(dir, "bridge.log"), "ab")
        self.starts = 0

    def copy_log(self, pipe):
        for line in pipe:
            self.log.write(line)
            self.log.flush()

    def port(self, which):
        with open(os.path.join(self.dir, which + ".port")) as f:
            return int(f.read().strip())

    def start(self):
        for p in ("admin", "in", "pull"):
            try:
                os.unlink(os.path.join(self.dir, p + ".port"))
            except FileNotFoundError:
                pass
        env = dict(os.environ, CEBRIDGE_PLUGIN_DIR=PLUGINS,
                   INTEROP_SECRET=SECRET, INTEROP_ADMIN_TOKEN=TOKEN)

        def child():
            # a file size limit makes writes fail (EFBIG) instead of killing
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        self.log.write(f"---- start {self.starts}\n".encode())
        self.log.flush()
        # through a pipe: B's file size limit must not cost its log lines
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "cebridge"), "run", "-c", self.conf,
             "--plugin-dir", PLUGINS], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=env, preexec_fn=child)
        threading.Thread(target=self.copy_log, args=(self.proc.stdout,),
                         daemon=True).start()
        self.starts += 1
        wait_until(f"{self.name} ready", self.ready)

    def ready(self):
        if self.proc.poll() is not None:
            raise Fail(f"{self.name} exited with {self.proc.returncode}")
        try:
            st, _ = http("GET", f"http://127.0.0.1:{self.port('admin')}/readyz")
            return st == 200
        except (FileNotFoundError, ValueError):
            return False

    def admin(self, path):
        st, body = http("GET", f"http://127.0.0.1:{self.port('admin')}/v1"
                        + path, headers={"Authorization": "Bearer " + TOKEN})
        if st != 200:
            raise Fail(f"{self.name} GET {path}: {st} {body}")
        return json.loads(body)

    def answers(self, want_503):
        """B's intermediary's answers so far (its metrics): the 503s, or
        all the others."""
        st, body = http("GET", f"http://127.0.0.1:{self.port('admin')}"
                        "/metrics")
        if st != 200:
            raise Fail(f"{self.name} /metrics: {st}")
        n = 0
        for line in body.splitlines():
            if line.startswith("cebridge_http_requests_total{") and \
                    ('code="503"' in line) == want_503:
                n += int(float(line.rsplit(" ", 1)[1]))
        return n

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Fail(f"{self.name} did not stop on SIGTERM")
            if self.proc.returncode != 0:
                raise Fail(f"{self.name} exited {self.proc.returncode} "
                           "after SIGTERM")

    def set_fsize(self, limit):
        resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE,
                         (limit, resource.RLIM_INFINITY))


def bridge_section(dir):
    return (f"[bridge]\nstore = {dir}/store.db\n"
            f"admin.listen = 127.0.0.1:0\nadmin.port_file = {dir}/admin.port\n"
            "admin.token = ${INTEROP_ADMIN_TOKEN}\n"
            "log.format = text\nlog.level = info\nprofile = off\n"
            "drain_timeout = 5s\n\n")


def conf_a(dir, proxy_port, signed):
    batch = "batch.max = 5\nbatch.wait = 50ms\n" if MODE == "batch" else ""
    sig = "webhook.secrets = ${INTEROP_SECRET}\n" if signed else ""
    return bridge_section(dir) + (
        "[source in]\nplugin = http\nlisten = 127.0.0.1:0\n"
        f"port_file = {dir}/in.port\nauth = none\n\n"
        "[sink b]\nplugin = http\n"
        f"url = http://127.0.0.1:{proxy_port}/events\n"
        f"mode = {MODE}\nallow_insecure_http = true\ntimeout = 2s\n"
        "circuit.failures = 5\ncircuit.open_for = 200ms\n" + batch + sig +
        "\n[route a-to-b]\nfrom = in\nto = b\nretry.mode = exponential\n"
        "retry.base = 50ms\nretry.max_delay = 500ms\ndeadline = 10m\n"
        "timeout = 2s\ndlq = store\n")


def conf_b(dir, signed):
    sig = "webhook.secrets = ${INTEROP_SECRET}\n" if signed else ""
    return bridge_section(dir) + (
        "[source partner]\nplugin = http\nlisten = 127.0.0.1:0\n"
        f"port_file = {dir}/in.port\nauth = none\nidempotency = required\n"
        "retry_after = 1s\n"
        + sig +
        "\n[sink out]\nplugin = pull\nlisten = 127.0.0.1:0\n"
        f"port_file = {dir}/pull.port\nauth = none\n\n"
        "[route in]\nfrom = partner\nto = out\n")


class Producer:
    """Posts events to A, each retried until A answers 202 (A may be down:
    a producer retries)."""

    def __init__(self, a):
        self.a = a
        self.posted = []
        self.n = 0

    def post(self, count, tag):
        for _ in range(count):
            self.n += 1
            eid = f"{tag}-{self.n}"
            ev = {"specversion": "1.0", "id": eid, "source": "urn:interop:a",
                  "type": "nl.example.interop", "datacontenttype":
                  "application/json", "data": {"n": self.n}}
            body = json.dumps(ev).encode()

            def accepted():
                try:
                    port = self.a.port("in")
                except (FileNotFoundError, ValueError):
                    return False
                st, _ = http("POST", f"http://127.0.0.1:{port}/events", body,
                             {"Content-Type": "application/cloudevents+json"})
                return st == 202

            wait_until(f"A to accept {eid}", accepted)
            self.posted.append(eid)


def pull_all(b):
    """Every event in B's pull queue (not committed), in order."""
    out, cursor = [], None
    while True:
        q = f"?max=100" + (f"&cursor={cursor}" if cursor else "")
        st, body = http("GET", f"http://127.0.0.1:{b.port('pull')}"
                        f"/v1/pull/out{q}")
        if st != 200:
            raise Fail(f"pull: {st} {body}")
        r = json.loads(body)
        if not r["events"]:
            return out
        out += r["events"]
        cursor = r["cursor"]


def queue_depth(br, route):
    routes = br.admin("/routes")
    if isinstance(routes, dict):
        routes = routes.get("routes", [])
    for r in routes:
        if r["name"] == route:
            return r["queue_depth"]
    raise Fail(f"{br.name}: no route {route}")


def run(signed, root):
    label = f"{MODE}/{'signed' if signed else 'unsigned'}"
    dir_a, dir_b = os.path.join(root, "a"), os.path.join(root, "b")
    os.makedirs(dir_a)
    os.makedirs(dir_b)
    b = Bridge("B", dir_b, conf_b(dir_b, signed))
    proxy = Proxy(lambda: b.port("in"))
    a = Bridge("A", dir_a, conf_a(dir_a, proxy.port, signed))
    try:
        b.start()
        a.start()
        prod = Producer(a)
        prod.post(EVENTS_PER_PHASE, "plain")
        for fault in FAULTS:
            if fault == "submit503":
                # B's store cannot grow: its commits fail, B answers 503
                n503 = b.answers(True)
                b.set_fsize(0)
                # until A's attempts meet B's 503s (A retries them): B's
                # files may have room left (a WAL reused from its start),
                # so events flow until a write needs to grow one
                def refused():
                    if b.answers(True) >= n503 + 2:
                        return True
                    prod.post(4, fault)
                    return False

                wait_until("B to answer 503", refused)
                b.set_fsize(resource.RLIM_INFINITY)
                # every retry of A reaches this same B (its cache of
                # webhook-ids included) before the restart
                wait_until("A's retries to settle",
                           lambda: queue_depth(a, "a-to-b") == 0)
                b.stop()
                b.start()
            elif fault == "cut":
                with proxy.lock:
                    proxy.cut = 3
                prod.post(EVENTS_PER_PHASE, fault)
                wait_until("three answers cut", lambda: proxy.cuts_done >= 3)
            elif fault == "restartB":
                prod.post(EVENTS_PER_PHASE // 2, fault)
                b.kill9()
                prod.post(EVENTS_PER_PHASE // 2, fault + "-down")
                b.start()
            elif fault == "killA":
                prod.post(EVENTS_PER_PHASE // 2, fault)
                a.kill9()
                a.start()
                prod.post(EVENTS_PER_PHASE // 2, fault + "-after")
            else:
                raise Fail(f"unknown fault {fault}")
        want = sorted(prod.posted)
        wait_until(f"{label}: A's queue empty",
                   lambda: queue_depth(a, "a-to-b") == 0)
        wait_until(f"{label}: B's queue empty",
                   lambda: queue_depth(b, "in") == 0)
        got = [e["id"] for e in pull_all(b)]
        letters = a.admin("/dlq")
        if letters:
            raise Fail(f"{label}: A dead-lettered {json.dumps(letters)[:2000]}")
        dups = sorted({i for i in got if got.count(i) > 1})
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        if dups or missing or extra or len(got) != len(want):
            raise Fail(f"{label}: B's journal: {len(got)} events for "
                       f"{len(want)} posted; duplicated {dups}, missing "
                       f"{missing}, unexpected {extra}")
        if "cut" in FAULTS and proxy.cuts_done < 3:
            raise Fail(f"{label}: only {proxy.cuts_done} answers were cut")
        a.stop()
        b.stop()
        print(f"{label}: {len(want)} events, each once in B's journal, "
              f"A's DLQ empty (faults: {' '.join(FAULTS)}; B started "
              f"{b.starts}x, A {a.starts}x, {proxy.cuts_done} answers cut)")
    except Fail:
        for br in (a, b):
            br.log.flush()
            with open(os.path.join(br.dir, "bridge.log"), "rb") as f:
                tail = f.read()[-6000:].decode(errors="replace")
            print(f"---- {br.name} log (tail)\n{tail}")
        raise
    finally:
        for br in (a, b):
            if br.proc and br.proc.poll() is None:
                br.proc.kill()
                br.proc.wait()
        proxy.close()


def main():
    root = tempfile.mkdtemp(prefix=f"ceb-interop-{MODE}-")
    try:
        for signed in (False, True):
            run(signed, os.path.join(root, "signed" if signed else "unsigned"))
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        if not os.environ.get("INTEROP_KEEP"):
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept", root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
