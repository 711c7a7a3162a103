#!/bin/sh
# run_store.sh: the store engines side by side in one run on this machine.
# HTTP -> durable 202 (testsink, mode ack) and HTTP -> Kafka (the mock
# cluster, as bench/http/run_wrk.sh) with
#   sqlite  one bridge on the SQLite engine (store.db)
#   pg1     one bridge on PostgreSQL (a private server this script starts)
#   pg2     two bridges on that PostgreSQL, wrk's threads split over them
#
#   bench/store/run_store.sh [-d SECONDS] [-c "64"] [-e "sqlite pg1 pg2"]
#                            [-s "http202 http2kafka"] BUILD_DIR
#
# BUILD_DIR holds bin/cebridge, lib/cebridge/plugins/{http,kafka}.so,
# tests/plugins-dir/testsink.so and bin/ceb-kafka-mock. PostgreSQL 15 from
# Debian (postgresql-15): initdb into a temporary directory, fsync=on,
# synchronous_commit=on, run as "nobody" when this script runs as root; one
# fresh database per run. wrk (Debian wrk) POSTs on C keep-alive
# connections for SECONDS (default 15) after one second of warm-up.
# Per run: events/s (2xx answers / SECONDS), wrk's p50 and p99, CPU per
# event of the bridge(s) and of PostgreSQL separately (utime+stime from
# /proc/PID/stat: the bridges; the postmaster and every child of it, from
# the start of the load until the bridges are idle again, i.e. every
# accepted event delivered), and write volume per event: PostgreSQL's WAL
# (pg_stat_wal.wal_bytes) and the bridge's /proc/PID/io write_bytes (the
# SQLite WAL and database; on PostgreSQL its own logs only).
# PGSTATS=N in the environment: PostgreSQL loads pg_stat_statements and each
# PostgreSQL run prints its N statements of most execution time (calls,
# rows, total and mean ms, WAL bytes, full-page images, plans and planning
# ms): where PostgreSQL's CPU and WAL per event go; and per table the
# rows inserted, updated (of which HOT: no new index entries) and deleted,
# and its sequential scans and the rows they read.
# PGCONF="name=value ..." in the environment: further server settings
# (-c name=value each), e.g. the operator guide's sizing settings; the
# script prints the settings it ran with. fsync and synchronous_commit stay on.
# BRIDGECONF="key = value" in the environment: a further [bridge] line for
# every bridge (e.g. "store.pool = 3").
set -eu
DUR=15
CONNS=64
ENGINES="sqlite pg1 pg2"
SCEN="http202 http2kafka"
while getopts d:c:e:s: o; do
  case $o in
    d) DUR=$OPTARG ;;
    c) CONNS=$OPTARG ;;
    e) ENGINES=$OPTARG ;;
    s) SCEN=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-d S] [-c CONNS] [-e ENGINES] [-s SCENARIOS] BUILD_DIR" >&2; exit 2; }
B=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 2; }
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
TCK=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/ceb-store-bench.XXXXXX)
chmod 755 "$WORK"
PGPID=  # the postmaster
PGJOB=  # the background job that runs it (runuser)
PGPORT=
BRIDGES=
MOCK=
as_pg() { # runs a PostgreSQL binary as nobody when root
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}
cleanup() {
  for p in $BRIDGES; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  [ -n "$MOCK" ] && kill "$MOCK" 2>/dev/null && wait "$MOCK" 2>/dev/null || true
  BRIDGES=
  MOCK=
}
stop_pg() { # fast shutdown of the postmaster, then reap the runuser child
  [ -n "$PGPID" ] && kill -INT "$PGPID" 2>/dev/null || true
  [ -n "$PGJOB" ] && wait "$PGJOB" 2>/dev/null || true
  PGPID=
  PGJOB=
}
trap 'cleanup; stop_pg; rm -rf "$WORK"' EXIT INT TERM

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
sum_ticks() { # pids...
  t=0
  for p in "$@"; do t=$((t + $(ticks "$p"))); done
  echo $t
}
pg_pids() { # the postmaster and its children
  echo "$PGPID"
  ps -o pid= --ppid "$PGPID" 2>/dev/null || true
}
wbytes() { awk '/^write_bytes/ {print $2}' "/proc/$1/io" 2>/dev/null || echo 0; }
waitfile() { # path, seconds
  w=0
  while [ ! -s "$1" ]; do
    w=$((w + 1))
    [ $w -le $(($2 * 10)) ] || return 1
    sleep 0.1
  done
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
psql_q() { # sql: one value
  "$PGBIN/psql" -X -A -t -q -h 127.0.0.1 -p "$PGPORT" -U bench -d "$1" -c "$2"
}

start_pg() {
  [ -x "$PGBIN/initdb" ] || { echo "no PostgreSQL server binaries (apt-get install postgresql-15)" >&2; exit 2; }
  mkdir -p "$WORK/pg" && chmod 777 "$WORK/pg"
  [ "$(id -u)" = 0 ] && chown nobody "$WORK/pg"
  as_pg "$PGBIN/initdb" -D "$WORK/pg/data" -U bench --auth=trust \
    --encoding=UTF8 --locale=C --no-sync > "$WORK/pg/initdb.log" 2>&1
  PGPORT=$(free_port)
  as_pg "$PGBIN/postgres" -D "$WORK/pg/data" -p "$PGPORT" -k "$WORK/pg" \
    -h 127.0.0.1 -c fsync=on -c synchronous_commit=on -c max_connections=200 \
    -c logging_collector=off -c log_min_messages=warning \
    $(for kv in ${PGCONF:-}; do printf -- '-c %s ' "$kv"; done) \
    ${PGSTATS:+-c shared_preload_libraries=pg_stat_statements \
      -c pg_stat_statements.track=all \
      -c pg_stat_statements.track_planning=on} \
    > "$WORK/pg/postgres.log" 2>&1 &
  PGJOB=$!
  w=0
  until "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT"; do
    w=$((w + 1)); [ $w -le 600 ] || { echo "postgres did not start" >&2; cat "$WORK/pg/postgres.log" >&2; exit 1; }
    sleep 0.1
  done
  PGPID=$(head -1 "$WORK/pg/data/postmaster.pid")
}

run_one() { # engine scenario conns
  E=$1; S=$2; C=$3
  D=$WORK/run; rm -rf "$D"; mkdir -p "$D"
  case $S in
    http202)
      SINK="plugin = testsink
mode = ack" ;;
    http2kafka)
      mkfifo "$D/mockin"
      "$B/bin/ceb-kafka-mock" -t bench.out:16 < "$D/mockin" > "$D/mock.out" 2>"$D/mock.err" &
      MOCK=$!
      exec 9> "$D/mockin"
      waitfile "$D/mock.out" 20 || { echo "mock did not start" >&2; return 1; }
      SINK="plugin = kafka
brokers = $(head -1 "$D/mock.out")
topic = bench.out
key_attribute = subject" ;;
    *) echo "unknown scenario $S" >&2; return 1 ;;
  esac
  case $E in
    sqlite) N=1 ;;
    pg1) N=1 ;;
    pg2) N=2 ;;
    *) echo "unknown engine $E" >&2; return 1 ;;
  esac
  DB=
  if [ "$E" != sqlite ]; then
    DB=bench_$(date +%s)_$$
    psql_q postgres "CREATE DATABASE $DB" > /dev/null
  fi
  PORTS=
  i=1
  while [ $i -le $N ]; do
    mkdir -p "$D/b$i/conf"
    if [ "$E" = sqlite ]; then STORE=$D/b$i/store.db; else
      STORE="postgresql://bench@127.0.0.1:$PGPORT/$DB"; fi
    cat > "$D/b$i/conf/bridge.conf" <<INI
[bridge]
store = $STORE
admin.listen = off
plugin_dir = $B/lib/cebridge/plugins:$B/tests/plugins-dir
log.format = text
log.level = warn
profile = warn
${BRIDGECONF:-}

[source intermediary]
plugin = http
listen = 127.0.0.1:0
port_file = $D/b$i/port
auth = none
idempotency = off
# wrk's 64 connections plus the warm-up's, still closing, from one address
max_connections_per_ip = 1024

[sink out]
$SINK

[route in]
from = intermediary
to = out
order_by = subject
max_inflight = 4096
INI
    "$B/bin/cebridge" run -c "$D/b$i/conf" > "$D/b$i/bridge.log" 2>&1 &
    BRIDGES="$BRIDGES $!"
    waitfile "$D/b$i/port" 60 || { echo "bridge did not start:" >&2; cat "$D/b$i/bridge.log" >&2; return 1; }
    PORTS="$PORTS${PORTS:+,}$(cat "$D/b$i/port")"
    i=$((i + 1))
  done
  URL=http://127.0.0.1:$(echo "$PORTS" | cut -d, -f1)/events
  export PORTS CEB_WRK_EVENTS="$HERE/../http/wrk_cloudevents.lua"
  LUA=$HERE/wrk_multi.lua
  wrk -t2 -c"$C" -d1s -s "$LUA" "$URL" > /dev/null
  # shellcheck disable=SC2086
  T0=$(sum_ticks $BRIDGES)
  P0=0; W0=0
  if [ -n "$DB" ]; then
    # shellcheck disable=SC2046
    P0=$(sum_ticks $(pg_pids))
    W0=$(psql_q "$DB" "SELECT wal_bytes FROM pg_stat_wal")
    if [ -n "${PGSTATS:-}" ]; then
      psql_q "$DB" "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" > /dev/null
      psql_q "$DB" "SELECT pg_stat_statements_reset()" > /dev/null
    fi
  fi
  IO0=0
  for p in $BRIDGES; do IO0=$((IO0 + $(wbytes "$p"))); done
  LOAD=$(cut -d' ' -f1 /proc/loadavg)
  wrk -t2 -c"$C" -d"${DUR}s" --latency -s "$LUA" "$URL" > "$D/wrk.out"
  # shellcheck disable=SC2086
  prev=$(sum_ticks $BRIDGES); n=0
  while [ $n -lt 60 ]; do
    sleep 1
    # shellcheck disable=SC2086
    cur=$(sum_ticks $BRIDGES)
    [ $((cur - prev)) -le $((TCK / 50)) ] && break
    prev=$cur; n=$((n + 1))
  done
  # shellcheck disable=SC2086
  T1=$(sum_ticks $BRIDGES)
  P1=0; W1=0
  if [ -n "$DB" ]; then
    # shellcheck disable=SC2046
    P1=$(sum_ticks $(pg_pids))
    W1=$(psql_q "$DB" "SELECT wal_bytes FROM pg_stat_wal")
  fi
  IO1=0
  for p in $BRIDGES; do IO1=$((IO1 + $(wbytes "$p"))); done
  LOAD2=$(cut -d' ' -f1 /proc/loadavg)
  awk -v e="$E" -v s="$S" -v c="$C" -v dt=$((T1 - T0)) -v dp=$((P1 - P0)) \
      -v wal="$W0 $W1" -v io=$((IO1 - IO0)) -v tck="$TCK" -v dur="$DUR" \
      -v l1="$LOAD" -v l2="$LOAD2" '
    function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000;
                     if (v ~ /s$/) return v * 1000000; return v }
    /^ +50%/ { p50 = us($2) } /^ +99%/ { p99 = us($2) }
    / requests in / { req = $1 }
    /Non-2xx or 3xx/ { bad = $5 }
    /Socket errors/ { err = $0 }
    END { ok = req - bad; split(wal, w, " ");
          walb = w[2] - w[1];
          printf "%-10s %-6s c=%-3d %7.0f ev/s  p50 %7.3f ms  p99 %7.3f ms  " \
                 "CPU bridge %6.1f us/ev  postgres %6.1f us/ev  " \
                 "WAL %6.0f B/ev  bridge writes %6.0f B/ev  " \
                 "(%d 2xx, %d other; load %s -> %s)%s\n",
                 s, e, c, ok / dur, p50 / 1000, p99 / 1000,
                 ok ? dt * 1000000 / tck / ok : 0,
                 ok ? dp * 1000000 / tck / ok : 0,
                 ok ? walb / ok : 0, ok ? io / ok : 0, ok, bad, l1, l2,
                 err ? "  " err : "" }' "$D/wrk.out"
  if [ -n "$DB" ] && [ -n "${PGSTATS:-}" ]; then
    psql_q "$DB" "SELECT calls, rows, round(total_exec_time::numeric, 0)
      AS total_ms, round(mean_exec_time::numeric, 3) AS mean_ms,
      wal_bytes AS wal_b, wal_fpi, plans,
      round(total_plan_time::numeric, 0) AS plan_ms,
      left(regexp_replace(query, '\s+', ' ', 'g'), 90)
      FROM pg_stat_statements ORDER BY total_exec_time DESC
      LIMIT $PGSTATS" | sed 's/^/    /'
    # row versions per table since the database was made (warm-up
    # included): hot = updates that wrote no index entry
    psql_q "$DB" "SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd,
      n_tup_hot_upd AS hot, n_tup_del AS del, seq_scan, seq_tup_read
      FROM pg_stat_user_tables WHERE n_tup_upd > 0 OR seq_scan > 0
      ORDER BY relname" | sed 's/^/    /'
  fi
  for i in $(seq 1 $N); do
    if grep -qi "error" "$D/b$i/bridge.log"; then
      echo "  bridge $i log has errors:" >&2; grep -i error "$D/b$i/bridge.log" | head -3 >&2
    fi
  done
  exec 9>&- 2>/dev/null || true
  cleanup
  [ -n "$DB" ] && psql_q postgres "DROP DATABASE $DB" > /dev/null || true
}

case " $ENGINES " in *" pg"*) start_pg ;; esac
echo "# $(date -u +%FT%TZ) $(nproc) cores, ${DUR}s per run, build $B"
case " $ENGINES " in *" pg"*) echo "# postgres: fsync=on synchronous_commit=on ${PGCONF:-(defaults)}" ;; esac
for S in $SCEN; do
  for C in $CONNS; do
    for E in $ENGINES; do
      run_one "$E" "$S" "$C"
    done
  done
done
