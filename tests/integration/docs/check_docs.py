#!/usr/bin/env python3
"""The docs name only config keys and commands that exist.

  check_docs.py SOURCE_DIR CEBRIDGE PLUGIN_DIR

1. docs/config-reference.md equals `cebridge config-reference` (not stale).
2. Every key set in an ```ini block of README.md, docs/*.md and
   plugins/*/README.md is a key of the reference (prefix keys such as
   rdkafka.* and match.* cover their families).
3. Every `cebridge COMMAND` mentioned there is a command `cebridge --help`
   lists, and every `cebridge COMMAND SUB` of dlq/event/schema/contracts is a
   subcommand that command's --help mentions.
4. Every path of the tree that README.md, docs/architecture.md and
   docs/plugin-guide.md name (core/..., sdk/..., plugins/..., include/...,
   tests/..., ...) exists, and every file name they give without its folder
   (`store_vfs.c`) is the name of a file of the tree. Placeholders
   (`plugins/<name>/`, `cmd_<name>.c`) and globs are skipped.
"""
import glob
import os
import re
import subprocess
import sys

src, cebridge, plugin_dir = sys.argv[1:4]
failures = []

ref = subprocess.run([cebridge, "config-reference", "--plugin-dir", plugin_dir],
                     capture_output=True, text=True, check=True).stdout
ref_path = os.path.join(src, "docs", "config-reference.md")
with open(ref_path, encoding="utf-8") as f:
    if f.read() != ref:
        failures.append("docs/config-reference.md is stale: regenerate it with "
                        "`cebridge config-reference > docs/config-reference.md`")

keys, prefixes = set(), set()
for m in re.finditer(r"^\| `([a-z0-9_.*<>A-Za-z-]+)` \|", ref, re.M):
    k = m.group(1)
    if k.endswith("*"):
        prefixes.add(k[:-1])
    else:
        keys.add(k)
if len(keys) < 30:
    failures.append(f"only {len(keys)} keys parsed from the reference")

docs = [os.path.join(src, "README.md")] + sorted(
    glob.glob(os.path.join(src, "docs", "*.md"))) + sorted(
    glob.glob(os.path.join(src, "plugins", "*", "README.md")))
docs = [d for d in docs if not d.endswith("config-reference.md")]

help_text = subprocess.run([cebridge, "--help"], capture_output=True,
                           text=True).stdout
commands = set(re.findall(r"^  ([a-z-]+) ", help_text, re.M))
if "run" not in commands:
    failures.append("cannot read the command list from cebridge --help")
sub_help = {}
for c in ("dlq", "event", "schema", "contracts"):
    if c in commands:
        sub_help[c] = subprocess.run([cebridge, c, "--help"],
                                     capture_output=True, text=True).stdout

checked_keys = checked_cmds = 0
for path in docs:
    rel = os.path.relpath(path, src)
    text = open(path, encoding="utf-8").read()
    for block in re.findall(r"```ini\n(.*?)```", text, re.S):
        for line in block.splitlines():
            m = re.match(r"^\s*([a-z][a-z0-9_.<>-]*)\s*=", line)
            if not m:
                continue
            key = m.group(1)
            checked_keys += 1
            if key not in keys and not any(key.startswith(p) for p in prefixes):
                failures.append(f"{rel}: config key '{key}' is not in the reference")
    for m in re.finditer(r"\bcebridge ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?", text):
        cmd, sub = m.group(1), m.group(2)
        if cmd in ("is", "and", "moves", "keeps", "runs", "loads", "plugin",
                   "binary", "project", "sdk"):
            continue  # prose ("cebridge is ...")
        checked_cmds += 1
        if cmd not in commands:
            failures.append(f"{rel}: 'cebridge {cmd}' is not a command")
        elif sub and cmd in sub_help and sub not in sub_help[cmd]:
            failures.append(f"{rel}: 'cebridge {cmd} {sub}' is not in its --help")

# 4. The map pages name only files and folders that exist.
TOP = ("core", "sdk", "plugins", "include", "tests", "bench", "contrib",
       "docs", "cmake", "schemas", "bridge.d")
PATH = re.compile(r"(?<![\w/.<>-])((?:%s)/[A-Za-z0-9_./<>*-]*)" %
                  "|".join(re.escape(t) for t in TOP))
BARE = re.compile(r"(?<![\w/.<>-])([A-Za-z0-9_-]+\.[ch])\b(?![\w/<>])")
basenames = set()
for root, dirs, files in os.walk(src):
    dirs[:] = [d for d in dirs if not d.startswith(".") and
               not d.startswith("build")]
    basenames.update(files)
checked_paths = 0
for rel in ("README.md", "docs/architecture.md", "docs/plugin-guide.md"):
    text = open(os.path.join(src, rel), encoding="utf-8").read()
    for m in PATH.finditer(text):
        p = m.group(1).rstrip(".")
        if "<" in p or "*" in p:
            continue
        checked_paths += 1
        if not os.path.exists(os.path.join(src, p)):
            failures.append(f"{rel}: '{p}' does not exist")
    for m in BARE.finditer(text):
        checked_paths += 1
        if m.group(1) not in basenames:
            failures.append(f"{rel}: no file of the tree is named "
                            f"'{m.group(1)}'")
if checked_paths < 50:
    failures.append(f"only {checked_paths} paths found in the map pages")

for f in failures:
    print("FAIL:", f)
print(f"docs: {checked_keys} config keys and {checked_cmds} command mentions "
      f"checked in {len(docs)} files; {checked_paths} paths in the map pages")
print(f"{1 if not failures else 0} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
