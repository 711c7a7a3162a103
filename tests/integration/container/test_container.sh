#!/usr/bin/env bash
# contrib/docker/Dockerfile builds and runs: a Debian 12 base made with
# mmdebstrap from the Debian archive, the image built from this source tree
# with podman, every plugin loads in it, the container becomes healthy
# through its own HEALTHCHECK (cebridge health), takes an event on the
# intermediary and serves it from the pull queue.
#   test_container.sh SOURCE_DIR
# Exits 77 (ctest: skipped) with the reason when podman cannot run a
# container on this machine at all; every failure after that fails.
# Environment: CEB_CONTAINER_BASE reuses an existing Debian 12 image instead
# of the mmdebstrap one; CEB_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
src=$1
tag=ceb-ci-$$-$(date +%s)
image=localhost/cebridge-ci:$tag
ctr=cebridge-ci-$tag
work=$(mktemp -d)
cleanup() {
  podman rm -f -t 5 "$ctr" >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo "== $* ($SECONDS s)"; }

# Limits any sandbox allows: podman's defaults (RLIMIT_NOFILE 1048576, a
# large RLIMIT_NPROC) are refused where CAP_SYS_RESOURCE is missing. The
# bridge needs a few dozen threads and a few hundred descriptors.
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ] && nofile=65536
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=4096:4096")
# Host networking: container bridges need netavark's firewall backends,
# which sandboxes often lack; the bridge listens on 127.0.0.1 port 0 and
# writes its ports into the state volume.
run_opts=(--network host "${limits[@]}")

base=${CEB_CONTAINER_BASE:-localhost/cebridge-ci-base:bookworm}
if ! podman image exists "$base"; then
  [ -z "${CEB_CONTAINER_BASE:-}" ] || { echo "no image $base"; exit 1; }
  step "base image $base from mmdebstrap"
  mmdebstrap --quiet --variant=minbase bookworm "$work/base.tar" \
    "${CEB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  podman import -q "$work/base.tar" "$base" >/dev/null
  rm -f "$work/base.tar"
fi

# Which OCI runtime can start a container here (crun refuses hybrid cgroup
# v1/v2 hosts, runc does not).
runtime=()
probe_err=""
for rt in "" runc crun; do
  opt=(); [ -z "$rt" ] || opt=(--runtime "$rt")
  if [ -n "$rt" ] && ! command -v "$rt" >/dev/null; then continue; fi
  if err=$(podman "${opt[@]}" run --rm "${run_opts[@]}" "$base" true 2>&1); then
    runtime=("${opt[@]}")
    probe_err=""
    break
  fi
  probe_err+="podman ${opt[*]} run $base true: $err"$'\n'
done
if [ -n "$probe_err" ]; then
  echo "SKIP: podman cannot run a container on this machine:"
  echo "$probe_err"
  exit 77
fi
pm() { podman "${runtime[@]}" "$@"; }

step "build $image (runtime ${runtime[*]:-default})"
# --format docker: the OCI format has no HEALTHCHECK.
pm build -q --format docker --layers=false --network host "${limits[@]}" \
  --build-arg BASE="$base" -f "$src/contrib/docker/Dockerfile" -t "$image" \
  "$src" >/dev/null

step "every plugin loads (the runtime packages are complete)"
for p in http pull kafka mqtt asyncapi; do
  pm run --rm --no-healthcheck "${run_opts[@]}" "$image" plugins "/usr/lib/cebridge/plugins/$p.so" \
    || { echo "plugin $p does not load in the image"; exit 1; }
done

step "run"
mkdir "$work/conf" "$work/state"
chmod 0777 "$work/state" # the image's cebridge user writes its store there
cat >"$work/conf/00-ci.conf" <<'CONF'
[bridge]
store = /var/lib/cebridge/store.db
admin.listen = 127.0.0.1:0
admin.port_file = /var/lib/cebridge/admin.port
log.format = text

[source in]
plugin = http
listen = 127.0.0.1:0
port_file = /var/lib/cebridge/in.port
auth = none

[sink out]
plugin = pull
listen = 127.0.0.1:0
port_file = /var/lib/cebridge/out.port
auth = none

[route r]
from = in
to = out
CONF
# Mounted over the image's default config: its CMD and HEALTHCHECK apply
# as they are.
# (podman's periodic health timers need systemd, which a CI machine may not
# run: it says so on stderr and the check itself still runs on demand.)
pm run -d --name "$ctr" "${run_opts[@]}" \
  -v "$work/conf:/etc/cebridge/bridge.d:ro" -v "$work/state:/var/lib/cebridge" \
  "$image" >/dev/null 2>"$work/run.err" || { cat "$work/run.err"; exit 1; }

# The image's own health check turns healthy once the bridge is ready.
healthy=0
for _ in $(seq 120); do
  if pm healthcheck run "$ctr" >/dev/null 2>&1; then healthy=1; break; fi
  pm container exists "$ctr" && [ "$(pm inspect -f '{{.State.Running}}' "$ctr")" = true ] \
    || break
  sleep 0.5
done
if [ "$healthy" -ne 1 ]; then
  echo "container never healthy; its log:"
  pm logs "$ctr" 2>&1 | tail -30
  pm healthcheck run "$ctr" || true
  exit 1
fi
[ "$(pm exec "$ctr" id -u)" != 0 ] || { echo "the bridge runs as root"; exit 1; }

in_port=$(cat "$work/state/in.port")
out_port=$(cat "$work/state/out.port")
id=ci-$tag
status=$(curl -s -o "$work/post.out" -w '%{http_code}' --noproxy '*' \
  -H 'Content-Type: application/cloudevents+json' \
  --data "{\"specversion\":\"1.0\",\"id\":\"$id\",\"source\":\"urn:nld:oin:00000001234567890000:systeem:ci\",\"type\":\"nl.edu.ci.created\",\"data\":{\"n\":1}}" \
  "http://127.0.0.1:$in_port/events")
[ "$status" = 202 ] || { echo "POST answered $status: $(cat "$work/post.out")"; exit 1; }
got=0
for _ in $(seq 60); do
  if curl -s --noproxy '*' "http://127.0.0.1:$out_port/v1/pull/out?max=10" \
       | grep -q "\"$id\""; then got=1; break; fi
  sleep 0.5
done
[ "$got" -eq 1 ] || { echo "event $id not in the pull queue"; pm logs "$ctr" | tail -20; exit 1; }

step "stop"
pm stop -t 30 "$ctr" >/dev/null 2>>"$work/run.err"
code=$(pm inspect -f '{{.State.ExitCode}}' "$ctr")
[ "$code" = 0 ] || { echo "the bridge exited $code on SIGTERM"; pm logs "$ctr" | tail -20; exit 1; }
echo "container: image built, plugins load, healthy, event $id posted and pulled, clean stop ($SECONDS s)"
