#!/bin/sh
# run_wrk.sh: bridge CPU per event and latency with wrk, for one or more
# build trees run back to back (e.g. the commit before a change and after).
#
#   bench/http/run_wrk.sh [-d SECONDS] [-c "16 64"] [-s "SCENARIO..."]
#                         BUILD_DIR [BUILD_DIR...]
#
# Each BUILD_DIR is a CMake build tree holding bin/cebridge,
# lib/cebridge/plugins/{http,kafka}.so, tests/plugins-dir/testsink.so and
# bin/ceb-kafka-mock (targets cebridge ceb_plugin_http ceb_plugin_kafka
# ceb_plugin_testsink ceb-kafka-mock). Scenarios, everything on 127.0.0.1:
#   http202    http intermediary -> testsink (mode ack): the durable 202
#              path (journal, claim, settle) with a sink that costs nothing
#   http2kafka http intermediary -> kafka sink (acks=all, idempotent, the
#              sink's defaults) keyed and ordered by subject, against
#              librdkafka's mock cluster (ceb-kafka-mock); binary mode
#   http2kafka_structured  the same in structured mode (the record's value
#              is the JSON format: with ABI 1.1 the journal's bytes)
# The intermediary takes up to 4096 connections from 127.0.0.1 (its
# default per-address limit, 64, made -c256 runs measure refusals).
# wrk (Debian package wrk) POSTs 1 KiB structured CloudEvents with unique ids
# (wrk_cloudevents.lua) on C keep-alive connections for SECONDS (default 15).
# CPU per event: the bridge's utime+stime (/proc/PID/stat, all threads) from
# the start of the load until the bridge is idle again (every accepted event
# delivered: < 20 ms of CPU in 1 s, at most 60 s after the load), divided by
# the 2xx answers. One line per run, with the 1-minute load average: the
# machine's other work moves events/s and latency much more than CPU/event.
# ROUTE_EXTRA (environment): lines added to the route's section, e.g.
# ROUTE_EXTRA="metrics.keys_top = 20" to measure the per-key metrics (the
# subjects are k0..k999); a build that does not know a key fails to start.
# SOURCE_EXTRA (environment): lines added to the intermediary's section, e.g.
# SOURCE_EXTRA="threads = 1".
# PER_THREAD=1 (environment): also one line per bridge thread name with its
# CPU and voluntary/involuntary context switches per event over the same
# window (/proc/PID/task/*/stat and status; threads of one name summed).
set -eu
DUR=15
CONNS="16 64"
SCEN="http202 http2kafka http2kafka_structured"
while getopts d:c:s: o; do
  case $o in
    d) DUR=$OPTARG ;;
    c) CONNS=$OPTARG ;;
    s) SCEN=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-d S] [-c CONNS] [-s SCENARIOS] BUILD_DIR..." >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 2; }
TCK=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/ceb-wrk.XXXXXX)
BRIDGE=
MOCK=
cleanup() {
  [ -n "$BRIDGE" ] && kill "$BRIDGE" 2>/dev/null && wait "$BRIDGE" 2>/dev/null || true
  [ -n "$MOCK" ] && kill "$MOCK" 2>/dev/null && wait "$MOCK" 2>/dev/null || true
  BRIDGE=
  MOCK=
}
trap 'cleanup; rm -rf "$WORK"' EXIT INT TERM

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# per thread name: CPU ticks, voluntary and involuntary switches (the name
# may hold spaces: the fields after ")" are counted from there)
threads() {
  for t in /proc/"$1"/task/*; do
    n=$(tr ' ' _ < "$t/comm")
    c=$(sed 's/.*) //' "$t/stat" | awk '{print $12 + $13}')
    awk -v n="$n" -v c="$c" '/^voluntary_ctxt/ { v = $2 }
      /^nonvoluntary_ctxt/ { nv = $2 } END { print n, c, v, nv }' "$t/status"
  done | awk '{ c[$1] += $2; v[$1] += $3; nv[$1] += $4 }
    END { for (k in c) print k, c[k], v[k], nv[k] }' | sort
}
waitfile() { # path, seconds
  i=0
  while [ ! -s "$1" ]; do
    i=$((i + 1))
    [ $i -le $(($2 * 10)) ] || return 1
    sleep 0.1
  done
}

run_one() { # build scenario conns
  B=$1; S=$2; C=$3
  D=$WORK/run; rm -rf "$D"; mkdir -p "$D"
  case $S in
    http202)
      SINK="plugin = testsink
mode = ack" ;;
    http2kafka|http2kafka_structured)
      mkfifo "$D/mockin"
      "$B/bin/ceb-kafka-mock" -t bench.out:16 < "$D/mockin" > "$D/mock.out" 2>"$D/mock.err" &
      MOCK=$!
      exec 9> "$D/mockin" # keeps the mock's stdin open until cleanup
      waitfile "$D/mock.out" 20 || { echo "mock did not start" >&2; return 1; }
      SINK="plugin = kafka
brokers = $(head -1 "$D/mock.out")
topic = bench.out
key_attribute = subject"
      if [ "$S" = http2kafka_structured ]; then
        SINK="$SINK
mode = structured"
      fi ;;
    *) echo "unknown scenario $S" >&2; return 1 ;;
  esac
  mkdir -p "$D/conf"; cat > "$D/conf/bridge.conf" <<INI
[bridge]
store = $D/store.db
admin.listen = off
plugin_dir = $B/lib/cebridge/plugins:$B/tests/plugins-dir
log.format = text
log.level = warn
profile = warn

[source intermediary]
plugin = http
listen = 127.0.0.1:0
port_file = $D/port
auth = none
idempotency = off
# every wrk connection comes from 127.0.0.1: with the default per-address
# limit (64) wrk -c256 measured refused connections and reconnects
max_connections_per_ip = 4096
${SOURCE_EXTRA:-}

[sink out]
$SINK

[route in]
from = intermediary
to = out
order_by = subject
max_inflight = 4096
${ROUTE_EXTRA:-}
INI
  "$B/bin/cebridge" run -c "$D/conf" > "$D/bridge.log" 2>&1 &
  BRIDGE=$!
  waitfile "$D/port" 30 || { echo "bridge did not start:" >&2; cat "$D/bridge.log" >&2; return 1; }
  URL=http://127.0.0.1:$(cat "$D/port")/events
  # one second of warm-up (connections, producer, first pages), not counted
  wrk -t2 -c"$C" -d1s -s "$HERE/wrk_cloudevents.lua" "$URL" > /dev/null
  T0=$(ticks "$BRIDGE")
  [ "${PER_THREAD:-0}" = 1 ] && threads "$BRIDGE" > "$D/threads0"
  LOAD=$(cut -d' ' -f1 /proc/loadavg)
  wrk -t2 -c"$C" -d"${DUR}s" --latency -s "$HERE/wrk_cloudevents.lua" "$URL" > "$D/wrk.out"
  # until idle: every accepted event delivered
  prev=$(ticks "$BRIDGE"); n=0
  while [ $n -lt 60 ]; do
    sleep 1
    cur=$(ticks "$BRIDGE")
    [ $((cur - prev)) -le $((TCK / 50)) ] && break
    prev=$cur; n=$((n + 1))
  done
  T1=$(ticks "$BRIDGE")
  [ "${PER_THREAD:-0}" = 1 ] && threads "$BRIDGE" > "$D/threads1"
  LOAD2=$(cut -d' ' -f1 /proc/loadavg)
  awk -v b="$B" -v s="$S" -v c="$C" -v dt=$((T1 - T0)) -v tck="$TCK" \
      -v dur="$DUR" -v l1="$LOAD" -v l2="$LOAD2" '
    function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000;
                     if (v ~ /s$/) return v * 1000000; return v }
    /^ +50%/ { p50 = us($2) } /^ +99%/ { p99 = us($2) }
    / requests in / { req = $1 }
    /Non-2xx or 3xx/ { bad = $5 }
    /Socket errors/ { err = $0 }
    END { ok = req - bad;
          printf "%-10s c=%-3d %-28s %8.0f ev/s  p50 %7.3f ms  p99 %7.3f ms  " \
                 "CPU %6.1f us/event  (%d 2xx, %d other; load %s -> %s)%s\n",
                 s, c, b, ok / dur, p50 / 1000, p99 / 1000,
                 ok ? dt * 1000000 / tck / ok : 0, ok, bad, l1, l2,
                 err ? "  " err : "" }' "$D/wrk.out"
  if [ "${PER_THREAD:-0}" = 1 ]; then
    OK=$(awk '/ requests in / { r = $1 } /Non-2xx or 3xx/ { b = $5 }
              END { print r - b }' "$D/wrk.out")
    join "$D/threads0" "$D/threads1" | awk -v ok="$OK" -v tck="$TCK" '
      ok > 0 { printf "    %-16s CPU %6.1f us/event  switches %5.3f + %5.3f/event\n",
                      $1, ($5 - $2) * 1000000 / tck / ok, ($6 - $3) / ok,
                      ($7 - $4) / ok }'
  fi
  if grep -q "error\|ERROR" "$D/bridge.log"; then
    echo "  bridge log has errors:" >&2; grep -i error "$D/bridge.log" | head -3 >&2
  fi
  exec 9>&- 2>/dev/null || true
  cleanup
}

for S in $SCEN; do
  for C in $CONNS; do
    for B in "$@"; do
      run_one "$(cd "$B" && pwd)" "$S" "$C"
    done
  done
done
