#!/usr/bin/env bash
# Runs the README's 60-second tour against the default bridge.d, so that the
# README stays true. The tour's commands are taken from README.md itself;
# only the fixed ports, the binary path and the config directory are
# rewritten (a copy of bridge.d on ephemeral ports, store in a temp dir).
#   test_quickstart.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1 bin=$2
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cp -r "$src/bridge.d" "$work/conf"
# Ephemeral ports with port files; the store in the temp dir.
sed -i "s|^store = .*|store = $work/var/cebridge.db|; s|^admin.listen = .*|admin.listen = 127.0.0.1:0\nadmin.port_file = $work/admin.port|" "$work/conf/00-bridge.conf"
sed -i "s|^listen = 127.0.0.1:8080|listen = 127.0.0.1:0\nport_file = $work/in.port|" "$work/conf/10-intermediary.conf"
sed -i "s|^listen = 127.0.0.1:8082|listen = 127.0.0.1:0\nport_file = $work/pull.port|" "$work/conf/20-outbox.conf"
mkdir -p "$work/var"

"$bin/cebridge" check -c "$work/conf"
"$bin/cebridge" run -c "$work/conf" >"$work/log" 2>&1 &
pid=$!
wait_file() { for _ in $(seq 1 1000); do [ -s "$1" ] && return 0; sleep 0.01; done; echo "no $1"; cat "$work/log"; return 1; }
wait_file "$work/in.port"; wait_file "$work/pull.port"; wait_file "$work/admin.port"
in=$(cat "$work/in.port") pull=$(cat "$work/pull.port") admin=$(cat "$work/admin.port")

# The tour: the indented lines of the README section, comments dropped,
# continuation lines joined.
# A command spans lines while it ends in a backslash or a quote is open.
awk '/^## A 60-second tour/{on=1; next} /^## /{on=0}
     on && /^    /{ sub(/^    /, "")
       if (cur == "" && $0 ~ /^#/) next
       line = $0; cont = sub(/\\$/, "", line)
       cur = cur (cur == "" ? "" : " ") line
       q = gsub(/\047/, "\047", cur)
       if (!cont && q % 2 == 0) { print cur; cur = "" } }' \
  "$src/README.md" >"$work/tour.sh"
[ "$(grep -c . "$work/tour.sh")" -ge 6 ] || { echo "README tour not found"; exit 1; }
sed -i -e "s|127.0.0.1:8080|127.0.0.1:$in|g; s|127.0.0.1:8082|127.0.0.1:$pull|g" \
       -e "s|127.0.0.1:8081|127.0.0.1:$admin|g; s|build/bin/cebridge|$bin/cebridge|g" \
       -e "s|-c bridge.d|-c $work/conf|g" "$work/tour.sh"

out="$work/tour.out"
n=0
while IFS= read -r cmd; do
  [ -z "$cmd" ] && continue
  n=$((n + 1))
  echo "\$ $cmd" >>"$out"
  # A later step may depend on the delivery the first one started: the pull
  # step is retried briefly (the route delivers asynchronously).
  ok=0
  for _ in $(seq 1 200); do
    if bash -c "$cmd" >"$work/step" 2>&1; then ok=1; fi
    case "$cmd" in
      *v1/pull/outbox\?*) grep -q '"id":"e-1"' "$work/step" && break ;;
      *) break ;;
    esac
    sleep 0.02
  done
  cat "$work/step" >>"$out"
  # `dlq list` answers 1 when the DLQ is empty, which is right here.
  case "$cmd" in *"dlq list"*) ok=1 ;; esac
  [ $ok = 1 ] || { echo "tour step failed: $cmd"; cat "$out"; cat "$work/log"; exit 1; }
done <"$work/tour.sh"

fail() { echo "tour: $1"; cat "$out"; cat "$work/log"; exit 1; }
grep -q "HTTP/1.1 202 Accepted" "$out" || fail "the POST was not answered 202"
grep -q '"events":\[{"specversion":"1.0","id":"e-1"' "$out" || fail "e-1 not pulled"
grep -q '"committed":"1"' "$out" || fail "commit not acknowledged"
grep -qE "route intermediary-to-outbox +done" "$out" || fail "status is not done"
grep -q '"state":"done"' "$out" || fail "admin status is not done"
grep -q 'cebridge_delivery_attempts_total' "$out" || fail "metrics missing"
# the POST's ingest and the delivery's claim and outcome went through the
# store: ops >= commits >= 1, and the 202 waited for a WAL sync
awk '/^cebridge_store_commits_total /{c=$2} /^cebridge_store_ops_total /{o=$2}
     /^cebridge_store_syncs_total /{s=$2}
     END {exit !(c >= 1 && o >= c && s >= 1)}' "$out" ||
  fail "store metrics missing or inconsistent"
# the tour's one event is in the journal, so in the dedupe map
awk '/^cebridge_store_dedupe_entries /{e=$2} /^cebridge_store_dedupe_bytes /{b=$2}
     END {exit !(e >= 1 && b >= 16 * e)}' "$out" ||
  fail "dedupe map metrics missing or inconsistent"

kill -TERM "$pid"
wait "$pid"
pid=
echo "quickstart: $n tour commands ran, 1 passed, 0 failed"
