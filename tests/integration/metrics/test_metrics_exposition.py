#!/usr/bin/env python3
"""Prometheus conventions of /metrics (issue 16 E4), on a running bridge.

  test_metrics_exposition.py SOURCE_DIR CEBRIDGE

Runs the default bridge.d (HTTP intermediary -> pull queue) on ephemeral
ports, posts an accepted and a refused event and pulls, then scrapes
/metrics and parses it with prometheus_client's text parser:
  - every family has a HELP line (and not the generic "no description
    registered") and a TYPE that is counter, gauge or histogram;
  - cebridge_build_info{version, abi} is 1 and names this binary;
  - process_cpu_seconds_total, process_resident_memory_bytes,
    process_virtual_memory_bytes, process_open_fds, process_max_fds and
    process_start_time_seconds are there and plausible: the start time lies
    between just before the test started the process and when it was up,
    open fds match /proc/PID/fd, CPU seconds >= 0, RSS > 0.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("python3-prometheus-client is missing (contrib/dev/deps.sh installs it)")
    sys.exit(1)

src, cebridge = sys.argv[1:3]
failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def wait_for(cond, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise SystemExit(f"timed out waiting for {what}")


def http(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


work = tempfile.mkdtemp(prefix="ceb-metrics-")
proc = None
try:
    conf = os.path.join(work, "conf")
    shutil.copytree(os.path.join(src, "bridge.d"), conf)
    os.mkdir(os.path.join(work, "var"))

    def edit(name, pairs):
        path = os.path.join(conf, name)
        text = open(path).read()
        for pat, rep in pairs:
            text, n = re.subn(pat, rep, text, flags=re.M)
            if n != 1:
                raise SystemExit(f"{name}: '{pat}' not found once")
        open(path, "w").write(text)

    edit("00-bridge.conf", [
        (r"^store = .*$", f"store = {work}/var/cebridge.db"),
        (r"^admin\.listen = .*$",
         f"admin.listen = 127.0.0.1:0\nadmin.port_file = {work}/admin.port")])
    edit("10-intermediary.conf", [
        (r"^listen = 127\.0\.0\.1:8080$",
         f"listen = 127.0.0.1:0\nport_file = {work}/in.port")])
    edit("20-outbox.conf", [
        (r"^listen = 127\.0\.0\.1:8082$",
         f"listen = 127.0.0.1:0\nport_file = {work}/pull.port")])

    t0 = time.time()
    log = open(os.path.join(work, "bridge.log"), "w")
    proc = subprocess.Popen([cebridge, "run", "-c", conf], stdout=log,
                            stderr=subprocess.STDOUT)

    def port(name):
        p = os.path.join(work, name)
        try:
            v = open(p).read().strip()
            return int(v) if v else 0
        except (OSError, ValueError):
            return 0

    admin = wait_for(lambda: port("admin.port"), 30, "admin.port")
    inport = wait_for(lambda: port("in.port"), 30, "in.port")
    pull = wait_for(lambda: port("pull.port"), 30, "pull.port")
    t1 = time.time()

    event = {"specversion": "1.0", "id": "m-1",
             "source": "urn:nld:oin:00000001234567890000:systeem:metrics",
             "type": "nl.edu.metrics.test", "datacontenttype": "application/json",
             "data": {"n": 1}}
    st, _ = http("POST", f"http://127.0.0.1:{inport}/events",
                 json.dumps(event).encode(),
                 {"Content-Type": "application/cloudevents+json"})
    check(st == 202, f"POST answered {st}")
    st, _ = http("POST", f"http://127.0.0.1:{inport}/events", b"{}",
                 {"Content-Type": "application/cloudevents+json"})
    check(400 <= st < 500, f"invalid POST answered {st}")
    wait_for(lambda: '"m-1"' in http(
        "GET", f"http://127.0.0.1:{pull}/v1/pull/outbox?max=10")[1], 30,
        "the event in the pull queue")

    st, text = http("GET", f"http://127.0.0.1:{admin}/metrics")
    check(st == 200, f"/metrics answered {st}")
    open(os.path.join(work, "metrics.txt"), "w").write(text)

    # The raw text: a HELP line before every TYPE line, for the same name.
    helps = {}
    types = {}
    for line in text.splitlines():
        m = re.match(r"^# HELP (\S+) (.*)$", line)
        if m:
            helps[m.group(1)] = m.group(2)
        m = re.match(r"^# TYPE (\S+) (\S+)$", line)
        if m:
            types[m.group(1)] = m.group(2)
            check(m.group(1) in helps, f"TYPE {m.group(1)} without HELP before it")
    check(len(types) >= 20, f"only {len(types)} families")
    check(set(helps) == set(types),
          f"HELP and TYPE name different families: {set(helps) ^ set(types)}")

    families = {}
    for fam in text_string_to_metric_families(text):
        families[fam.name] = fam
        check(fam.documentation.strip() != "", f"{fam.name}: empty HELP")
        check(fam.documentation != "no description registered",
              f"{fam.name}: no description registered (add it to "
              "core/metrics/ceb_metrics_help.c)")
        check(fam.type in ("counter", "gauge", "histogram"),
              f"{fam.name}: TYPE {fam.type}")
    # the parser drops _total from counter family names
    check(len(families) == len(types),
          f"parser saw {len(families)} families, the text {len(types)}")
    for want in ("cebridge_events_accepted", "cebridge_http_requests",
                 "cebridge_pull_events_fetched", "cebridge_ingest_latency_seconds"):
        check(want in families, f"family {want} missing")

    def one(name):
        fam = families.get(name)
        check(fam is not None, f"{name} missing")
        if fam is None:
            return None
        samples = [s for s in fam.samples if s.name in (name, name + "_total")]
        check(len(samples) == 1, f"{name}: {len(samples)} samples")
        return samples[0] if samples else None

    bi = one("cebridge_build_info")
    version = subprocess.run([cebridge, "version"], capture_output=True,
                             text=True).stdout.split()
    if bi:
        check(families["cebridge_build_info"].type == "gauge", "build_info type")
        check(bi.value == 1, f"build_info value {bi.value}")
        check(bi.labels.get("version") == version[1],
              f"build_info version {bi.labels} vs {version}")
        check(re.fullmatch(r"\d+\.\d+", bi.labels.get("abi", "")) is not None
              and f"(plugin ABI {bi.labels.get('abi')})" in " ".join(version),
              f"build_info abi {bi.labels} vs {version}")

    cpu = one("process_cpu_seconds")
    rss = one("process_resident_memory_bytes")
    vms = one("process_virtual_memory_bytes")
    fds = one("process_open_fds")
    maxfds = one("process_max_fds")
    start = one("process_start_time_seconds")
    if cpu:
        check(families["process_cpu_seconds"].type == "counter", "cpu type")
        check(0 <= cpu.value < 3600, f"cpu seconds {cpu.value}")
    if rss and vms:
        check(rss.value > 1 << 20, f"resident memory {rss.value}")
        check(vms.value >= rss.value, f"virtual {vms.value} < resident {rss.value}")
    if fds and maxfds:
        real = len(os.listdir(f"/proc/{proc.pid}/fd"))
        check(fds.value > 0, f"open fds {fds.value}")
        check(abs(fds.value - real) <= 16,
              f"open fds {fds.value}, /proc/{proc.pid}/fd has {real}")
        check(maxfds.value >= fds.value, f"max fds {maxfds.value}")
    if start:
        # btime has whole seconds: allow one second either side
        check(t0 - 2 <= start.value <= t1 + 2,
              f"start time {start.value} not within [{t0}, {t1}]")
        check(time.time() - start.value < 3600, "start time over an hour ago")
finally:
    if proc:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
            check(rc == 0, f"bridge exited {rc}")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            check(False, "bridge did not stop within 30 s")
    if failures:
        print(f"files kept in {work}")
        log_path = os.path.join(work, "bridge.log")
        if os.path.exists(log_path):
            print(open(log_path).read())
    else:
        shutil.rmtree(work, ignore_errors=True)

print(f"integration_metrics_exposition: {checks} checks, {len(failures)} failed")
print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
