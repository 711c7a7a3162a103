#!/bin/bash
# Per-thread CPU time and run-queue wait of a running process over an
# interval, from /proc/PID/task/*/schedstat (on-CPU ns, runnable-waiting ns,
# timeslices). Shows whether a thread is slow because it works or because it
# waits for a CPU.  Usage: thread_sched.sh PID [SECONDS]
set -eu
pid=${1:?usage: thread_sched.sh PID [SECONDS]}
secs=${2:-4}
case "$secs" in '' | *[!0-9]*) echo "SECONDS must be a whole number" >&2; exit 2 ;; esac
[ -d "/proc/$pid/task" ] || { echo "no process $pid" >&2; exit 1; }
snap() {
  for t in /proc/"$pid"/task/*; do
    # a thread may end between the listing and the reads
    printf '%s %s %s\n' "${t##*/}" "$(tr ' ' _ <"$t/comm" 2>/dev/null || echo gone)" \
      "$(cat "$t/schedstat" 2>/dev/null || echo '0 0 0')"
  done | sort
}
a=$(snap)
sleep "$secs"
b=$(snap)
join <(echo "$a") <(echo "$b") | awk '{printf "%-8s %-14s on CPU %8.1f ms   waiting for a CPU %8.1f ms   slices %d\n", $1, $2, ($7-$3)/1e6, ($8-$4)/1e6, $9-$5}'
