#!/usr/bin/env bash
# The integration guide's first scenario (docs/examples/rio-ordered): ordered
# updates per institution to a partner API, status per update, retryable vs
# definitive errors, DLQ and replay, status receipts on a pull queue. The
# example config runs as written, moved to ephemeral ports and a temp store.
#   test_rio_ordered.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1 bin=$2
ex=$src/docs/examples/rio-ordered
work=$(mktemp -d)
. "$(dirname "$0")/guide_lib.sh"

cp -r "$ex/bridge.d" "$work/conf"
c=$work/conf
bridge_conf "$c/00-bridge.conf"
ephemeral "$c/10-institutions.conf" 127.0.0.1:8080 in
ephemeral "$c/20-rio.conf" 127.0.0.1:8082 status

start_bg "$work/mock.log" python3 "$ex/mock_rio.py" --port 0 \
  --port-file "$work/rio.port" --log "$work/rio.jsonl"
rio=$(port_of "$work/rio.port")
grep -q '^url = http://127.0.0.1:9090/rio/${schachome}$' "$c/20-rio.conf" ||
  fail "the example's url changed"
sed -i "s|127.0.0.1:9090|127.0.0.1:$rio|" "$c/20-rio.conf"

"$bin/cebridge" check -c "$c" || fail "cebridge check refused the example"
start_bg "$work/bridge.log" "$bin/cebridge" run -c "$c"
bridge=$last_pid
in=$(port_of "$work/in.port") status=$(port_of "$work/status.port")
admin=$(port_of "$work/admin.port")

# The guide's own commands: its post() block, on the ephemeral port.
awk '/^    post\(\) \{/{on=1} on{line=$0; sub(/^    /, "", line); print line}
     on && /^    post b3 hva.nl/{on=0}' "$src/docs/integration-guide.md" |
  sed "s|127.0.0.1:8080|127.0.0.1:$in|" >"$work/post.sh"
[ "$(grep -c '^post ' "$work/post.sh")" = 6 ] || fail "guide post block not found"
bash "$work/post.sh" >"$work/post.out" 2>&1 || fail "guide post block failed"
[ "$(grep -c '^202$' "$work/post.out")" = 6 ] ||
  fail "guide posts not all 202: $(cat "$work/post.out")"

# A missing Idempotency-Key is refused (idempotency = required).
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$in/events" \
  -H 'Content-Type: application/cloudevents+json' -d '{}')
[ "$code" = 400 ] || fail "POST without Idempotency-Key answered $code"

settled() { "$bin/cebridge" status "$1" -c "$c" | grep -qE " (done|dead) "; }
for id in a1 a2 a3 b1 b2 b3; do
  wait_for 60 settled "$id" || fail "$id did not settle"
done

# Order per institution, institutions in parallel, one attempt for the
# definitive error, the same Idempotency-Key across a retry.
python3 - "$work/rio.jsonl" <<'PY' || fail "delivery order"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
def att(i): return [r for r in log if r["id"] == i]
ok = lambda i: next(r for r in att(i) if r["status"] == 200)
assert [r["status"] for r in att("a1")] == [503, 200], att("a1")
assert att("a1")[0]["key"] == att("a1")[1]["key"], "key changed on retry"
assert ok("a1")["t"] <= att("a2")[0]["t"] <= att("a3")[0]["t"], "uva order"
assert ok("b1")["t"] < ok("a1")["t"], "hva.nl waited for uva.nl"
assert [r["status"] for r in att("b2")] == [400], att("b2")
assert att("b2")[0]["t"] < att("b3")[0]["t"], "hva order"
assert all(r["institution"] == ("uva.nl" if r["id"][0] == "a" else "hva.nl")
           for r in log), "wrong URL"
print("order per institution ok")
PY

st=$("$bin/cebridge" status a1 -c "$c")
echo "$st" | grep -qE "route institutions-to-rio +done +attempts 2 " ||
  fail "status a1: $st"
st=$("$bin/cebridge" status b2 -c "$c")
echo "$st" | grep -qE "dead .*reason http.400" || fail "status b2: $st"
# /v1/ needs the admin token (the file the bridge wrote beside the store)
"$bin/cebridge" admin -c "$c" get /v1/events/b2/status >"$work/b2.json" ||
  fail "cebridge admin get /v1/events/b2/status"
grep -q '"state":"dead"' "$work/b2.json" || fail "admin status b2"
grep -q '"order_key":"hva.nl"' "$work/b2.json" || fail "order key of b2"
curl -sf -H "Authorization: Bearer $(cat "$work/var/admin.token")" \
  "http://127.0.0.1:$admin/v1/routes" | grep -q '"queue_depth":0' ||
  fail "queue not empty"

dl=$("$bin/cebridge" dlq list -c "$c" --route institutions-to-rio --json)
echo "$dl" | grep -q '"event_id": *"b2"' || fail "dlq list: $dl"
[ "$(echo "$dl" | grep -o '"event_id"' | wc -l)" = 1 ] || fail "dlq: $dl"
"$bin/cebridge" dlq show 1 -c "$c" | grep -q '"deadcause": "http.400"' ||
  fail "dlq show 1"

# Status receipts: one per update, done or failed.
curl -sf "http://127.0.0.1:$status/v1/pull/status?max=100" >"$work/receipts"
python3 - "$work/receipts" <<'PY' || fail "receipts: $(cat "$work/receipts")"
import json, sys
r = json.load(open(sys.argv[1]))
got = {e["subject"]: e["type"].rsplit(".", 1)[1] for e in r["events"]}
assert got == {"a1": "done", "a2": "done", "a3": "done", "b1": "done",
               "b2": "failed", "b3": "done"}, got
assert r["cursor"] == "6"
print("receipts ok")
PY
curl -sf -X POST "http://127.0.0.1:$status/v1/pull/status/commit?cursor=6" |
  grep -q '"committed":"6"' || fail "commit"

# Replay sends b2 again with the same id but a new Idempotency-Key (and
# webhook-id): a receiver following the annex keeps the first key's 400 for
# the key's lifetime and would answer the replay with it. The mock still
# refuses b2, so it is dead-lettered again, and a second replay gets a key
# of its own once more. The CLI writes to the store beside the running
# bridge, which picks the replayed delivery up by itself (no reload).
"$bin/cebridge" dlq replay 1 -c "$c" || fail "dlq replay"
b2_n() { [ "$(grep -c '"id": "b2"' "$work/rio.jsonl")" = "$1" ]; }
wait_for 8 b2_n 2 || fail "replay did not deliver b2 again"
dead_again() { "$bin/cebridge" dlq list -c "$c" --json | grep -q '"id": *2'; }
wait_for 8 dead_again || fail "b2 not dead-lettered again"
"$bin/cebridge" dlq replay 2 -c "$c" || fail "dlq replay 2"
wait_for 8 b2_n 3 || fail "second replay did not deliver b2"
python3 - "$work/rio.jsonl" <<'PY' || fail "replayed keys: $(grep b2 "$work/rio.jsonl")"
import json, re, sys
keys = [json.loads(l)["key"] for l in open(sys.argv[1]) if '"b2"' in l]
assert len(keys) == 3 and len(set(keys)) == 3, keys
uuid4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                   r"[0-9a-f]{12}$")
assert all(uuid4.match(k) for k in keys), keys
print("replay keys ok:", keys)
PY

# The operator guide's backup, taken while the bridge runs, is a complete
# store: the CLI reads the dead letter and the status from the copy.
if command -v sqlite3 >/dev/null; then
  sqlite3 "$work/var/store.db" ".backup $work/backup.db" || fail "backup"
  [ "$(sqlite3 "$work/backup.db" 'PRAGMA integrity_check')" = ok ] ||
    fail "backup integrity"
  "$bin/cebridge" dlq list --store "$work/backup.db" | grep -q " b2 " ||
    fail "backup lacks the dead letter"
  "$bin/cebridge" status a3 --store "$work/backup.db" | grep -q " done " ||
    fail "backup lacks the status of a3"
fi

curl -sf "http://127.0.0.1:$admin/metrics" >"$work/metrics"
grep -q '^cebridge_events_dead_total{route="institutions-to-rio",reason="rejected"}' \
  "$work/metrics" || fail "metrics"

kill -TERM "$bridge"
wait "$bridge" || fail "cebridge run did not exit 0 after SIGTERM"
echo "rio-ordered: 1 passed, 0 failed"
