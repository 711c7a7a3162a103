#!/usr/bin/env python3
"""The config shown in docs/integration-guide.md is the config that runs.

  check_guide_ini.py SOURCE_DIR

Every ```ini block of the guide is split into sections; a section that
exists in one of docs/examples/*/bridge.d must have there every
`key = value` line the guide shows for it, with the same value. Sections no
example defines (snippets such as a receiving partner's source) are listed
and skipped. Fails when fewer than 8 sections were matched, so that a
renamed example cannot make the check vacuous.
"""
import glob
import os
import re
import sys

src = sys.argv[1]
SECTION = re.compile(r"^\[(\w+)(?: ([^\]]+))?\]\s*$")
KEYVAL = re.compile(r"^([a-z][a-z0-9_.<>${}-]*)\s*=\s*(.*?)\s*$")


def sections(lines):
    """{(kind, name): {key: value}} from INI lines (comments dropped)."""
    out, cur = {}, None
    for line in lines:
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        m = SECTION.match(line)
        if m:
            cur = (m.group(1), m.group(2))
            out.setdefault(cur, {})
            continue
        m = KEYVAL.match(line)
        if m and cur:
            value = re.split(r"\s;", m.group(2))[0].strip()
            out[cur][m.group(1)] = value
    return out


examples = {}
for conf in glob.glob(os.path.join(src, "docs/examples/*/bridge.d/*.conf")):
    ex = conf.split(os.sep)[-3]
    with open(conf, encoding="utf-8") as f:
        for sec, kv in sections(f).items():
            examples.setdefault(sec, []).append((ex, kv))

guide = open(os.path.join(src, "docs/integration-guide.md"),
             encoding="utf-8").read()
failures, matched, skipped = [], 0, []
for block in re.findall(r"```ini\n(.*?)```", guide, re.S):
    for sec, kv in sections(block.splitlines()).items():
        found = examples.get(sec)
        if not found:
            skipped.append("[%s %s]" % sec)
            continue
        if len(found) > 1:
            failures.append("[%s %s] is in several examples" % sec)
            continue
        ex, real = found[0]
        matched += 1
        for k, v in kv.items():
            if real.get(k) != v:
                failures.append(f"guide [{sec[0]} {sec[1]}] {k} = {v}; "
                                f"docs/examples/{ex} has {real.get(k)!r}")

for f in failures:
    print("FAIL:", f)
if matched < 8:
    failures.append(f"only {matched} guide sections matched an example")
    print("FAIL:", failures[-1])
print(f"guide: {matched} sections match the examples; not in an example: "
      f"{', '.join(skipped) or 'none'}")
print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
