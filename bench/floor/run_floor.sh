#!/bin/sh
# run_floor.sh: the durable-202 floors under wrk, to set beside the bridge's
# HTTP -> 202 (bench/http/run_wrk.sh): CPU per event and latency of
# ceb_floor_raw and ceb_floor_mhd in each --sync mode (README.md).
#
#   bench/floor/run_floor.sh [-d SECONDS] [-c "16 64 256"]
#                            [-p "raw:none raw:inline ..."] BUILD_DIR
#
# BUILD_DIR is a CMake build tree with bench/ceb_floor_raw and
# bench/ceb_floor_mhd. wrk POSTs the 1 KiB structured CloudEvents of
# bench/http/wrk_cloudevents.lua on C keep-alive connections for SECONDS
# (default 15) after one second of warm-up. The data file is in a fresh
# mktemp -d under /tmp, where run_wrk.sh keeps the bridge's store (the same
# file system). Per run one line: 2xx answers per second, p50, p99, the
# server's CPU (utime+stime of all its threads, /proc/PID/stat) over the
# load window divided by the 2xx answers, the writes and fdatasyncs per
# event in the window (the server's counters, read with SIGUSR1 before and
# after), and the 1-minute load average before and after. The servers have
# no backlog: their CPU window ends with wrk.
set -eu
DUR=15
CONNS="16 64 256"
PROGS="raw:none raw:inline raw:thread mhd:none mhd:resume mhd:thread"
while getopts d:c:p: o; do
  case $o in
    d) DUR=$OPTARG ;;
    c) CONNS=$OPTARG ;;
    p) PROGS=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-d S] [-c CONNS] [-p PROG:MODE...] BUILD_DIR" >&2; exit 2; }
B=$(cd "$1" && pwd)
LUA=$(cd "$(dirname "$0")/../http" && pwd)/wrk_cloudevents.lua
command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 2; }
TCK=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/ceb-floor.XXXXXX)
SRV=
cleanup() {
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
  SRV=
}
trap 'cleanup; rm -rf "$WORK"' EXIT INT TERM

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
waitfile() { # path, seconds
  i=0
  while [ ! -s "$1" ]; do
    i=$((i + 1))
    [ $i -le $(($2 * 10)) ] || return 1
    sleep 0.1
  done
}
# the server's counters line (SIGUSR1), as "events writes syncs"
counters() { # pid, log, lines already there
  kill -USR1 "$1"
  i=0
  while [ "$(grep -c ' answers ' "$2")" -le "$3" ]; do
    i=$((i + 1))
    [ $i -le 50 ] || return 1
    sleep 0.1
  done
  grep ' answers ' "$2" | tail -1 | awk '{print $5, $7, $9}'
}

run_one() { # prog mode conns
  P=$1; M=$2; C=$3
  D=$WORK/run; rm -rf "$D"; mkdir -p "$D"
  "$B/bench/ceb_floor_$P" --sync "$M" --port-file "$D/port" \
    --file "$D/data" > /dev/null 2> "$D/log" &
  SRV=$!
  waitfile "$D/port" 30 || { echo "ceb_floor_$P did not start:" >&2; cat "$D/log" >&2; return 1; }
  URL=http://127.0.0.1:$(cat "$D/port")/events
  wrk -t2 -c"$C" -d1s -s "$LUA" "$URL" > /dev/null
  C0=$(counters "$SRV" "$D/log" 0)
  T0=$(ticks "$SRV")
  LOAD=$(cut -d' ' -f1 /proc/loadavg)
  wrk -t2 -c"$C" -d"${DUR}s" --latency -s "$LUA" "$URL" > "$D/wrk.out"
  T1=$(ticks "$SRV")
  C1=$(counters "$SRV" "$D/log" 1)
  LOAD2=$(cut -d' ' -f1 /proc/loadavg)
  awk -v p="$P:$M" -v c="$C" -v dt=$((T1 - T0)) -v tck="$TCK" \
      -v dur="$DUR" -v l1="$LOAD" -v l2="$LOAD2" -v c0="$C0" -v c1="$C1" '
    function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000;
                     if (v ~ /s$/) return v * 1000000; return v }
    /^ +50%/ { p50 = us($2) } /^ +99%/ { p99 = us($2) }
    / requests in / { req = $1 }
    /Non-2xx or 3xx/ { bad = $5 }
    /Socket errors/ { err = $0 }
    END { ok = req - bad; split(c0, a, " "); split(c1, b, " ");
          ev = b[1] - a[1];
          printf "%-12s c=%-3d %8.0f ev/s  p50 %7.3f ms  p99 %7.3f ms  " \
                 "CPU %6.1f us/event  writes %5.3f syncs %5.3f /event  " \
                 "(%d 2xx, %d other; load %s -> %s)%s\n",
                 p, c, ok / dur, p50 / 1000, p99 / 1000,
                 ok ? dt * 1000000 / tck / ok : 0,
                 ev ? (b[2] - a[2]) / ev : 0, ev ? (b[3] - a[3]) / ev : 0,
                 ok, bad, l1, l2, err ? "  " err : "" }' "$D/wrk.out"
  cleanup
}

for PM in $PROGS; do
  for C in $CONNS; do
    run_one "${PM%%:*}" "${PM#*:}" "$C"
  done
done
