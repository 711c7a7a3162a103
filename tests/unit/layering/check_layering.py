#!/usr/bin/env python3
"""The host's include directions are one-way (docs/architecture.md, "Layers").

Reads the Layers table of docs/architecture.md (rows top-down: a folder may
include only the folders its row names, and each of those must sit below it
in the table) and checks every `#include "..."` line of core/ against it:
  - an include of another core/ folder that its row does not name fails
    (an upward include, or one the table does not know of);
  - a core/ folder that has no row fails (the table must say where it sits);
  - a row that names a folder above itself fails (the table would not be a
    layering);
  - "../" in a core/ include fails (it would bypass the check);
  - the store's engines stay behind its interface: outside core/store/
    only store/ceb_store.h, the dispatch in core/store/ includes no
    engine's folder, an engine none of another (check_store_engines);
  - `__has_include` anywhere in core/, sdk/, plugins/ or include/ fails:
    parts are switched by CMake options, never by a header's presence.
Includes that resolve outside core/ (<ceb/...>, sdk/ headers) are not part
of the host's layering. Usage: check_layering.py SOURCE_DIR [ARCH_DOC]
"""
import os
import re
import sys

ROW = re.compile(r"^\|\s*`core/([a-z_]+)/`\s*\|(.*)\|\s*$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_layers(doc):
    """[(folder, {allowed})] in table order, from the "## Layers" section."""
    rows, inside = [], False
    with open(doc, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                inside = line.strip() == "## Layers"
                continue
            m = ROW.match(line) if inside else None
            if m:
                allowed = set(re.findall(r"`core/([a-z_]+)/`", m.group(2)))
                rows.append((m.group(1), allowed))
    return rows


STORE_API = ("store/ceb_store.h", "store/ceb_store_engine.h")


def check_store_engines(root):
    """The store's engines stay behind its interface (docs/architecture.md,
    "The house": core/store/):
      - a file outside core/store/ includes only store/ceb_store.h;
      - a file of core/store/ itself (the dispatch) includes no engine's
        folder: it knows engines through ceb_store_engine.h alone;
      - a file of an engine's folder core/store/<engine>/ includes no other
        engine's folder."""
    errors = []
    core = os.path.join(root, "core")
    for dp, _, fs in os.walk(core):
        for f in sorted(fs):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dp, f)
            rel = os.path.relpath(path, root)
            parts = os.path.relpath(path, core).split(os.sep)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m or not m.group(1).startswith("store/"):
                        continue
                    inc = m.group(1)
                    sub = inc.split("/")
                    if parts[0] != "store":
                        if inc != STORE_API[0]:
                            errors.append(f"{rel}:{n}: \"{inc}\": outside "
                                          f"core/store/ only store/ceb_store.h")
                    elif len(parts) == 2:
                        if len(sub) > 2:
                            errors.append(f"{rel}:{n}: \"{inc}\": the store's "
                                          f"dispatch reaches engines only "
                                          f"through store/ceb_store_engine.h")
                    elif len(sub) > 2 and sub[1] != parts[1]:
                        errors.append(f"{rel}:{n}: \"{inc}\": engine "
                                      f"core/store/{parts[1]}/ includes "
                                      f"another engine's folder")
    return errors


def main():
    root = sys.argv[1]
    doc = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        root, "docs", "architecture.md")
    errors = []
    rows = read_layers(doc)
    if not rows:
        print(f"{doc}: no '## Layers' table with `core/<folder>/` rows")
        return 1
    order = {name: i for i, (name, _) in enumerate(rows)}
    allowed = dict(rows)
    for name, deps in rows:
        for d in sorted(deps):
            if d not in order:
                errors.append(f"{doc}: core/{name}/ may include core/{d}/, "
                              f"which has no row")
            elif order[d] <= order[name]:
                errors.append(f"{doc}: core/{name}/ may include core/{d}/, "
                              f"which is not below it in the table")

    core = os.path.join(root, "core")
    for name in sorted(os.listdir(core)):
        folder = os.path.join(core, name)
        if not os.path.isdir(folder):
            continue
        sources = [os.path.join(dp, f) for dp, _, fs in os.walk(folder)
                   for f in fs if f.endswith((".c", ".h"))]
        if sources and name not in allowed:
            errors.append(f"core/{name}/: no row in the Layers table of {doc}")
            continue
        for path in sorted(sources):
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    if ".." in inc.split("/"):
                        errors.append(f"{rel}:{n}: \"{inc}\": no ../ in core/ "
                                      f"includes")
                        continue
                    top = inc.split("/")[0]
                    if ("/" not in inc or top == name or
                            not os.path.isfile(os.path.join(core, inc))):
                        continue  # own folder, or outside core/
                    if top not in allowed[name]:
                        where = ("above it" if top in order and
                                 order[top] < order[name] else "not listed")
                        errors.append(f"{rel}:{n}: core/{name}/ includes "
                                      f"\"{inc}\": core/{top}/ is {where} in "
                                      f"the Layers table")

    errors += check_store_engines(root)

    for tree in ("core", "sdk", "plugins", "include"):
        base = os.path.join(root, tree)
        for dp, _, fs in os.walk(base):
            for f in sorted(fs):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dp, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        if "__has_include" in line:
                            errors.append(
                                f"{os.path.relpath(path, root)}:{n}: "
                                f"__has_include: switch parts with a CMake "
                                f"option, not by a header's presence")

    for e in errors:
        print(e)
    print(f"layering: {len(rows)} layers, {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
