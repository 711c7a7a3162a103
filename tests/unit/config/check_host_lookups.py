#!/usr/bin/env python3
"""Fails when host code looks a config key up by name again.

The host's own keys ([bridge], [route], the common keys of [source], [sink]
and [contracts]) are bound once by ceb_conf_check into the typed structs of
core/config/ceb_host_cfg.h; code in core/ outside core/config/ reads their
fields. A ceb_config_str/int/bool/duration_ms/size/rate/list/origin/foreach
call with a literal key anywhere else in core/ is an error, unless it is
listed below with its reason (keys that belong to a plugin's spec, and the
prefix families that have no single field to bind to).

usage: check_host_lookups.py SOURCE_DIR
"""
import os
import re
import sys

# (file under core/, literal key): why it is not a host key read by name.
ALLOWED = {
    ("router/ceb_route_batch.c", "mode"): "the http sink plugin's key",
    ("router/ceb_route_batch.c", "batch.max"): "the http sink plugin's key",
    ("contracts/ceb_contracts.c", "types."): "the asyncapi plugin's prefix",
    ("router/ceb_route_parse.c", "match."): "a prefix family (foreach)",
}

CALL = re.compile(
    r"\bceb_config_(str|int|bool|duration_ms|size|rate|list|origin|foreach)"
    r"\s*\(\s*[^,;]*?,\s*\"([^\"]*)\"", re.S)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    core = os.path.join(root, "core")
    bad = []
    seen = set()
    for d, _, files in os.walk(core):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, core)
            if rel.startswith("config" + os.sep):
                continue
            text = open(path, encoding="utf-8", errors="replace").read()
            for m in CALL.finditer(text):
                key = m.group(2)
                line = text.count("\n", 0, m.start()) + 1
                if (rel, key) in ALLOWED:
                    seen.add((rel, key))
                    continue
                bad.append("core/%s:%d: ceb_config_%s(..., \"%s\"): read the "
                           "bound field of core/config/ceb_host_cfg.h instead"
                           % (rel, line, m.group(1), key))
    for k in sorted(set(ALLOWED) - seen):
        bad.append("core/%s: allowed lookup of \"%s\" is gone: drop it from "
                   "ALLOWED in %s" % (k[0], k[1], os.path.basename(__file__)))
    for b in bad:
        print(b)
    print("%d host config lookups by name outside core/config/" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
