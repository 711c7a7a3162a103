#!/usr/bin/env bash
# contrib/systemd/cebridge.service passes `systemd-analyze verify` against a
# DESTDIR install: the unit is placed where a Debian package puts it
# (/usr/lib/systemd/system) and verified with --root=DESTDIR, so ExecStart
# and ExecStartPre must name the installed binary, and the man page of
# Documentation= must be the installed one. Any line systemd-analyze prints
# (it exits 0 on unknown keys and unparsable values) fails the test.
#   test_systemd_unit.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/dest
unit=cebridge.service

DESTDIR=$root cmake --install "$build" --prefix /usr >/dev/null
mkdir -p "$root/usr/lib/systemd/system"
# The units the service's dependencies name (sysinit.target,
# network-online.target, multi-user.target, ...) come with systemd, not with
# cebridge: the host's, as the target system has them.
cp -a /usr/lib/systemd/system/. "$root/usr/lib/systemd/system/"
rm -f "$root/usr/lib/systemd/system/$unit"
install -m 0644 "$src/contrib/systemd/$unit" "$root/usr/lib/systemd/system/$unit"
# ExecReload's /bin/kill belongs to the OS (procps), not to the install.
mkdir -p "$root/bin"
[ -x /bin/kill ] || { echo "/bin/kill missing: apt-get install procps"; exit 1; }
cp /bin/kill "$root/bin/kill"

out=$(MANPATH=$root/usr/share/man SYSTEMD_LOG_COLOR=0 \
      systemd-analyze verify --root="$root" "$unit" 2>&1) && rc=0 || rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
  echo "systemd-analyze verify $unit (exit $rc):"
  echo "$out"
  exit 1
fi
echo "systemd unit: $unit verified against the DESTDIR install, no warnings"
