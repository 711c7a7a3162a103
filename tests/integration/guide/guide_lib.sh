# Shared by the guide tests: copy an example config into a temp dir, move it
# to ephemeral ports, start processes, wait with deadlines.
# Sourced with $work set; processes started with start_bg are killed on exit.
bg_pids=()
cleanup() {
  for p in "${bg_pids[@]}"; do
    kill -9 "$p" 2>/dev/null && { wait "$p" 2>/dev/null || true; }
  done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }

# start_bg LOG CMD...: runs CMD in the background, output to LOG.
start_bg() { local log=$1; shift; "$@" >"$log" 2>&1 & bg_pids+=($!); last_pid=$!; }

# wait_for SECONDS CMD...: retries CMD every 50 ms until it succeeds.
wait_for() {
  local t=$1; shift
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.05
  done
}

port_of() { wait_for 20 test -s "$1" || fail "no port file $1"; cat "$1"; }

# ephemeral CONF_FILE ADDR NAME: "listen = ADDR" -> port 0 + port file NAME.
ephemeral() {
  grep -q "^listen = $2\$" "$1" || fail "$1 has no 'listen = $2'"
  sed -i "s|^listen = $2\$|listen = 127.0.0.1:0\nport_file = $work/$3.port|" "$1"
}

# bridge_conf FILE: store in the temp dir, admin API on an ephemeral port.
bridge_conf() {
  sed -i "s|^store = .*|store = $work/var/store.db|; s|^admin.listen = .*|admin.listen = 127.0.0.1:0\nadmin.port_file = $work/admin.port|" "$1"
  mkdir -p "$work/var"
}
