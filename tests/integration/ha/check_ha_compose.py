#!/usr/bin/env python3
"""integration_ha_compose: contrib/compose/ha/ (PostgreSQL, two bridges,
HAProxy) is consistent without running it (CI has no container images):

1. `haproxy -c -f haproxy.cfg` says the configuration is valid, with no
   warning other than the bridges' names not resolving outside compose;
2. `cebridge check` passes on the bridges' configuration (bridge.d);
3. compose.yaml parses (python3-yaml) and agrees with both: the services
   HAProxy sends to are bridge services of the file, on the port the
   intermediary listens on, checked on the admin port; the bridges mount
   bridge.d where their command and health check read it and publish the
   admin port; the store URI names the postgres service, its user and its
   database; HAProxy publishes exactly the ports it binds; every file a
   service mounts or builds from exists.

usage: check_ha_compose.py SRC_DIR CEBRIDGE PLUGIN_DIR"""
import configparser
import glob
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

import yaml

src, cebridge, plugin_dir = sys.argv[1:4]
here = os.path.join(src, "contrib", "compose", "ha")
failures = []


def fail(msg):
    failures.append(msg)


# 1. haproxy -c
haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
cfg_path = os.path.join(here, "haproxy.cfg")
if not os.path.exists(haproxy):
    fail("haproxy not installed (contrib/deps/dev.txt lists it)")
else:
    r = subprocess.run([haproxy, "-c", "-f", cfg_path], capture_output=True,
                       text=True)
    out = r.stdout + r.stderr
    if r.returncode != 0 or "Configuration file is valid" not in out:
        fail(f"haproxy -c failed ({r.returncode}):\n{out}")
    for line in out.splitlines():
        if "[WARNING]" in line and "could not resolve address" not in line:
            fail(f"haproxy warns: {line}")
        if "[ALERT]" in line:
            fail(f"haproxy alert: {line}")

# 2. cebridge check
env = dict(os.environ, CEBRIDGE_ADMIN_TOKEN="compose-check-token",
           PGPASSWORD="compose-check")
conf_dir = os.path.join(here, "bridge.d")
r = subprocess.run([cebridge, "check", "-c", conf_dir, "--plugin-dir",
                    plugin_dir], capture_output=True, text=True, env=env)
if r.returncode != 0:
    fail(f"cebridge check bridge.d failed:\n{r.stdout}{r.stderr}")

# the bridges' configuration, read as ini (what this test compares)
ini = configparser.ConfigParser(interpolation=None, strict=True,
                                inline_comment_prefixes=(" ;",))
for f in sorted(glob.glob(os.path.join(conf_dir, "*.conf"))):
    ini.read(f)
bridge = ini["bridge"]
listen_port = None
for sec in ini.sections():
    if sec.startswith("source ") and ini[sec].get("plugin") == "http":
        listen_port = int(ini[sec]["listen"].rsplit(":", 1)[1])
admin_port = int(bridge["admin.listen"].rsplit(":", 1)[1])
store = urllib.parse.urlsplit(bridge["store"])
if store.scheme not in ("postgresql", "postgres"):
    fail(f"store is not a PostgreSQL URI: {bridge['store']}")
if store.password:
    fail("the store URI carries a password (PGPASSWORD does)")
if listen_port is None:
    fail("bridge.d has no http intermediary")

# haproxy.cfg: frontends' binds, servers, health-check port
with open(cfg_path, encoding="utf-8") as f:
    cfg = f.read()
binds = {int(p) for p in re.findall(r"^\s*bind\s+\S*:(\d+)", cfg, re.M)}
servers = re.findall(r"^\s*server\s+(\S+)\s+([\w.-]+):(\d+)", cfg, re.M)
check_port = re.search(r"^\s*default-server\s.*\bcheck\b.*\bport\s+(\d+)",
                       cfg, re.M)
if not servers:
    fail("haproxy.cfg names no server")
if not check_port or int(check_port.group(1)) != admin_port:
    fail(f"haproxy checks port {check_port and check_port.group(1)}, the "
         f"admin API (/readyz) listens on {admin_port}")
if "/readyz" not in cfg:
    fail("haproxy.cfg does not check /readyz")

# 3. compose.yaml
with open(os.path.join(here, "compose.yaml"), encoding="utf-8") as f:
    compose = yaml.safe_load(f)
services = compose.get("services", {})
for need in ("postgres", "haproxy"):
    if need not in services:
        fail(f"compose.yaml has no service {need}")
bridges = [n for n, s in services.items()
           if "run" in (s.get("command") or [])]
if len(bridges) < 2:
    fail(f"compose.yaml runs {len(bridges)} bridge(s), want two or more")


def container_ports(svc):
    out = set()
    for p in svc.get("ports", []):
        out.add(int(str(p).rsplit(":", 1)[1].split("/")[0]))
    return out


def mounts(svc):
    out = {}
    for v in svc.get("volumes", []):
        parts = str(v).split(":")
        out[parts[1]] = parts[0]
    return out


for name in bridges:
    s = services[name]
    cmd = s["command"]
    where = cmd[cmd.index("-c") + 1]
    m = mounts(s)
    if os.path.normpath(os.path.join(here, m.get(where, "?"))) != conf_dir:
        fail(f"{name} reads {where}, which is not ./bridge.d")
    hc = s.get("healthcheck", {}).get("test", [])
    if "health" not in hc or hc[hc.index("-c") + 1] != where:
        fail(f"{name}: the health check does not ask the bridge of {where}")
    if admin_port not in container_ports(s):
        fail(f"{name} does not publish the admin port {admin_port}")
    b = s.get("build", {})
    ctx = os.path.normpath(os.path.join(here, b.get("context", "?")))
    if not os.path.exists(os.path.join(ctx, b.get("dockerfile", "?"))):
        fail(f"{name}: no {b.get('dockerfile')} in {ctx}")
    envs = s.get("environment", {})
    if "PGPASSWORD" not in envs:
        fail(f"{name} gets no PGPASSWORD")
    dep = s.get("depends_on", {})
    if "postgres" not in dep:
        fail(f"{name} does not wait for postgres")

for sname, host, port in servers:
    if host not in bridges:
        fail(f"haproxy server {sname} -> {host}, not a bridge service")
    if int(port) != listen_port:
        fail(f"haproxy server {sname} -> port {port}, the intermediary "
             f"listens on {listen_port}")
if {h for _, h, _ in servers} != set(bridges):
    fail(f"haproxy balances over {sorted({h for _, h, _ in servers})}, "
         f"compose runs {sorted(bridges)}")

hp = services.get("haproxy", {})
if container_ports(hp) != binds:
    fail(f"haproxy publishes {sorted(container_ports(hp))}, binds "
         f"{sorted(binds)}")
hm = mounts(hp)
if os.path.normpath(os.path.join(here, hm.get("/etc/haproxy/haproxy.cfg",
                                              "?"))) != cfg_path:
    fail("haproxy does not mount ./haproxy.cfg at /etc/haproxy/haproxy.cfg")
hb = hp.get("build", {})
if not os.path.exists(os.path.join(here, hb.get("context", "?"),
                                   hb.get("dockerfile", "?"))):
    fail("haproxy: its Dockerfile is missing")

pg = services.get("postgres", {})
penv = pg.get("environment", {})
if store.hostname != "postgres" or (store.port or 5432) != 5432:
    fail(f"store host {store.hostname}:{store.port}, want postgres:5432")
if store.username != penv.get("POSTGRES_USER"):
    fail(f"store user {store.username}, postgres creates "
         f"{penv.get('POSTGRES_USER')}")
if store.path.lstrip("/") != penv.get("POSTGRES_DB"):
    fail(f"store database {store.path}, postgres creates "
         f"{penv.get('POSTGRES_DB')}")
pw = str(penv.get("POSTGRES_PASSWORD", ""))
for name in bridges:
    if str(services[name].get("environment", {}).get("PGPASSWORD")) != pw:
        fail(f"{name}'s PGPASSWORD is not the postgres password")
if "synchronous_commit=on" not in (pg.get("command") or []):
    fail("postgres does not say synchronous_commit=on")

for msg in failures:
    print("FAIL:", msg)
print(f"integration_ha_compose: {len(failures)} failure(s); "
      f"{len(bridges)} bridges, servers {servers}, binds {sorted(binds)}")
sys.exit(1 if failures else 0)
