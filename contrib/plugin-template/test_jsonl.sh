#!/usr/bin/env bash
# End-to-end test of the jsonl plugin with a real cebridge:
#   test_jsonl.sh CEBRIDGE PLUGIN_BUILD_DIR INSTALLED_PLUGIN_DIR
# Starts the bridge on an HTTP intermediary (loopback, ephemeral port) routed
# to the plugin, posts one event, waits (with a deadline) for its line, and
# stops the bridge with SIGTERM (exit 0 expected).
set -euo pipefail
cebridge=$1 plugin_dir=$2 installed=$3
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/conf" "$work/var"
# The bridge needs the http plugin (installed next to cebridge) and ours.
plugins="$work/plugins"
mkdir -p "$plugins"
ln -s "$plugin_dir/jsonl.so" "$plugins/jsonl.so"
ln -s "$installed/http.so" "$plugins/http.so"
cat > "$work/conf/00.conf" <<CONF
[bridge]
store = $work/var/store.db
plugin_dir = $plugins
admin.listen = off
log.format = text

[source in]
plugin = http
listen = 127.0.0.1:0
port_file = $work/port
auth = none

[sink archive]
plugin = jsonl
path = $work/archive.jsonl

[route in-archive]
from = in
to = archive
CONF
"$cebridge" plugins --plugin-dir "$plugins" "$plugins/jsonl.so"
"$cebridge" check -c "$work/conf"
"$cebridge" run -c "$work/conf" >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 1 500); do [ -s "$work/port" ] && break; sleep 0.01; done
port=$(cat "$work/port")
status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/events" \
  -H 'Content-Type: application/cloudevents+json' \
  -d '{"specversion":"1.0","id":"t-1","source":"urn:nld:oin:00000001234567890000:systeem:t","type":"nl.edu.t.created","data":{"x":1}}')
[ "$status" = 202 ] || { echo "POST answered $status"; cat "$work/log"; exit 1; }
for _ in $(seq 1 500); do grep -q '"id":"t-1"' "$work/archive.jsonl" 2>/dev/null && break; sleep 0.01; done
grep -q '"id":"t-1"' "$work/archive.jsonl" || { echo "event not delivered"; cat "$work/log"; exit 1; }
kill -TERM "$pid"
wait "$pid"
echo "jsonl_delivers: ok"
