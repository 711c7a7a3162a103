#!/usr/bin/env bash
# Installs the Debian 12 packages cebridge needs to build, run and test.
# Safe to run again; needs root (or sudo).
set -euo pipefail

if [ ! -r /etc/os-release ] || ! . /etc/os-release || [ "${ID:-}" != debian ]; then
  echo "cebridge: contrib/dev/deps.sh supports Debian 12 (bookworm) only;" >&2
  echo "on another system install the packages listed in this script by hand." >&2
  exit 2
fi
if [ "${VERSION_ID:-}" != 12 ]; then
  echo "cebridge: warning: tested on Debian 12, this is Debian ${VERSION_ID:-?}" >&2
fi

# The package lists live in contrib/deps/ (build.txt, runtime.txt, dev.txt),
# one package a line, so the Dockerfile installs the same ones: add a
# package there, not here.
deps_dir="$(cd "$(dirname "$0")/../deps" && pwd)"
mapfile -t PKGS < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' \
  "$deps_dir/build.txt" "$deps_dir/runtime.txt" "$deps_dir/dev.txt" | grep -v '^$')
# Tools that may come from elsewhere than Debian (a Node.js or Python build
# already on PATH): installed from Debian only when the command is missing.
TOOLS=("node:nodejs" "npm:npm" "python3:python3")

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
for t in "${TOOLS[@]}"; do
  command -v "${t%%:*}" >/dev/null 2>&1 || missing+=("${t#*:}")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "cebridge: run as root to install: ${missing[*]}" >&2; exit 2; }
  SUDO=sudo
fi
echo "cebridge: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
