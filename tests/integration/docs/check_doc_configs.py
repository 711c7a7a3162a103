#!/usr/bin/env python3
"""Every config example of the docs passes `cebridge check`.

  check_doc_configs.py SOURCE_DIR CEBRIDGE PLUGIN_DIR

Checked, each in its own temporary config directory:
1. every ```ini block of README.md, docs/*.md and plugins/*/README.md;
2. every inline `KEY = VALUE` span of the same files whose value holds a
   ${NAME} reference (e.g. the secret rotation `webhook.secrets = ${OLD}
   ${NEW}`), put in place of that key in the first block that sets it;
3. every bridge.d directory under contrib/ and the repository's bridge.d.

A block is a fragment of a whole configuration, so the test completes it
the way a reader would, never by changing what the block says:
- a [bridge] section with a store in the temporary directory when the
  block has none;
- a section a route names but the block does not define: a loopback
  source (http) or sink (pull) of that name;
- lines without a section (rdkafka.* pass-through snippets): inside a kafka
  sink;
- every ${NAME} referenced: set in the environment (a whsec_ secret, which
  every secret key accepts);
- every absolute path and file:PATH secret: the same path under the
  temporary directory, created (a certificate or key made with openssl
  where the key wants one).
Fails when fewer blocks than expected were found, so that a changed fence
cannot make the check vacuous.
"""
import base64
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

src, cebridge, plugin_dir = sys.argv[1:4]
SECTION = re.compile(r"^\s*\[(\w+)(?: ([^\]]+))?\]\s*$")
KEYVAL = re.compile(r"^\s*([a-z][a-z0-9_.<>-]*)\s*=\s*(.*?)\s*$")
ENVREF = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")
SECRET = "whsec_" + base64.b64encode(b"cebridge docs example secret 32b").decode()

failures = []
work = tempfile.mkdtemp(prefix="ceb-doc-configs-")
pki = os.path.join(work, "pki")
os.makedirs(pki)
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
                "/CN=127.0.0.1", "-keyout", os.path.join(pki, "key.pem"),
                "-out", os.path.join(pki, "cert.pem")],
               check=True, capture_output=True)


def docs():
    files = [os.path.join(src, "README.md")] + sorted(
        glob.glob(os.path.join(src, "docs", "*.md"))) + sorted(
        glob.glob(os.path.join(src, "plugins", "*", "README.md")))
    return [f for f in files if not f.endswith("config-reference.md")]


def value_of(line):
    """The value of a key = value line, without a trailing comment."""
    m = KEYVAL.match(line)
    return re.split(r"\s[;#]", m.group(2))[0].strip() if m else None


def provide_file(path, key, root):
    """Creates root+path: a certificate or key when the key names one."""
    dest = root + path
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if os.path.exists(dest):
        return
    k = key.lower()
    if "key" in k and "password" not in k:
        shutil.copy(os.path.join(pki, "key.pem"), dest)
    elif any(w in k for w in ("cert", "ca", "tls", "ssl")):
        shutil.copy(os.path.join(pki, "cert.pem"), dest)
    else:
        with open(dest, "w") as f:
            f.write(SECRET + "\n")


def complete(block, root):
    """The block as a whole config text, with the files it names created."""
    lines = block.splitlines()
    out, defined, refs = [], set(), []
    kind = None
    if not any(SECTION.match(l) for l in lines):
        out += ["[sink fragment]", "plugin = kafka", "brokers = 127.0.0.1:9",
                "topic = fragment"]
        kind = "sink"
    for line in lines:
        m = SECTION.match(line)
        if m:
            kind = m.group(1)
            defined.add((kind, m.group(2)))
            out.append(line)
            continue
        m = KEYVAL.match(line)
        if not m:
            out.append(line)
            continue
        key, value = m.group(1), value_of(line)
        if kind == "route" and key in ("from", "to", "dlq", "receipts"):
            for name in re.split(r"[\s,]+", value):
                if name and name != "store":
                    refs.append(("source" if key == "from" else "sink",
                                 name.split(":")[0]))
        for p in re.findall(r"(?:^|(?<=\s)|(?<=file:))(/[^\s,]+)", value):
            provide_file(p, key, root)
        line = re.sub(r"(^|\s|file:)/", lambda mm: mm.group(1) + root + "/",
                      line[:line.index("=") + 1]) + re.sub(
            r"(^|\s|file:)/", lambda mm: mm.group(1) + root + "/",
            line[line.index("=") + 1:])
        out.append(line)
    if not any(k == "bridge" for k, _ in defined):
        out = ["[bridge]", f"store = {root}/store.db",
               "admin.listen = 127.0.0.1:0", ""] + out
    for kind, name in refs:
        if (kind, name) in defined:
            continue
        defined.add((kind, name))
        if kind == "source":
            out += ["", f"[source {name}]", "plugin = http",
                    "listen = 127.0.0.1:0", "auth = none"]
        else:
            out += ["", f"[sink {name}]", "plugin = pull",
                    "listen = 127.0.0.1:0", "auth = none"]
    return "\n".join(out) + "\n"


def run_check(label, confdir, text_for_env):
    env = dict(os.environ)
    for name in ENVREF.findall(text_for_env):
        env[name] = SECRET
    # --no-init: the docs' configs name their production machine's files
    # (/etc/cebridge/tls/...) and brokers, which plugins' init looks at
    r = subprocess.run([cebridge, "check", "--no-init", "-c", confdir,
                        "--plugin-dir", plugin_dir],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        failures.append(f"{label}: cebridge check failed:\n"
                        + (r.stdout + r.stderr).strip())


blocks = []  # (label, text)
inline = []  # (label, key, value)
for path in docs():
    rel = os.path.relpath(path, src)
    text = open(path, encoding="utf-8").read()
    for i, b in enumerate(re.findall(r"```ini\n(.*?)```", text, re.S)):
        blocks.append((f"{rel} ini block {i + 1}", b))
    for m in re.finditer(r"`([a-z][a-z0-9_.-]*) = ([^`]*\$\{[^`]*)`", text):
        inline.append((f"{rel} inline `{m.group(0)[1:-1]}`", m.group(1),
                       m.group(2)))

for label, key, value in inline:
    for blabel, b in blocks:
        if re.search(rf"^\s*{re.escape(key)}\s*=", b, re.M):
            b2 = re.sub(rf"^(\s*{re.escape(key)}\s*=).*$",
                        lambda m: m.group(1) + " " + value, b, count=1,
                        flags=re.M)
            blocks.append((f"{label} in {blabel}", b2))
            break
    else:
        failures.append(f"{label}: no ini block sets '{key}'")

n = 0
for label, b in blocks:
    n += 1
    root = os.path.join(work, f"b{n}")
    confdir = os.path.join(root, "bridge.d")
    os.makedirs(confdir)
    text = complete(b, root)
    with open(os.path.join(confdir, "50-example.conf"), "w") as f:
        f.write(text)
    run_check(label, confdir, text)

dirs = sorted(glob.glob(os.path.join(src, "contrib", "**", "bridge.d"),
                        recursive=True)) + sorted(
    glob.glob(os.path.join(src, "docs", "examples", "*", "bridge.d"))) + [
    os.path.join(src, "bridge.d")]
for d in dirs:
    text = "".join(open(f).read() for f in glob.glob(os.path.join(d, "*.conf")))
    run_check(os.path.relpath(d, src), d, text)

shutil.rmtree(work, ignore_errors=True)
for f in failures:
    print("FAIL:", f)
print(f"doc configs: {len(blocks)} blocks ({len(inline)} inline), "
      f"{len(dirs)} directories checked, {len(failures)} failed")
if len(blocks) < 17 or len(inline) < 1 or len(dirs) < 7:
    print("FAIL: fewer examples than the docs hold: is the fence still "
          "```ini?")
    sys.exit(1)
sys.exit(1 if failures else 0)
