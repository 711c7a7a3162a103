#!/usr/bin/env bash
# The integration guide's second scenario (docs/examples/signed-webhooks):
# signed webhooks to a partner on the 0s 5s 5m ... schedule. The partner's
# receiver (webhook_receiver.py) verifies every Standard Webhooks signature;
# its first answer is a 503, so the bridge retries 5 s later with the same
# webhook-id. The example config runs as written, moved to ephemeral ports.
#   test_signed_webhooks.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1 bin=$2
ex=$src/docs/examples/signed-webhooks
work=$(mktemp -d)
. "$(dirname "$0")/guide_lib.sh"

python3 "$ex/webhook_receiver.py" --self-test || fail "receiver self-test"

cp -r "$ex/bridge.d" "$work/conf"
c=$work/conf
bridge_conf "$c/00-bridge.conf"
ephemeral "$c/10-archive.conf" 127.0.0.1:8080 in
grep -q '^retry.schedule = 0s 5s 5m 30m 2h 5h 10h 10h$' "$c/20-partner.conf" &&
  grep -q '^deadline = 72h$' "$c/20-partner.conf" &&
  grep -q '^timeout = 15s$' "$c/20-partner.conf" ||
  fail "the example no longer has the seed's schedule, deadline and timeout"

# The shared secret: 32 random bytes, as the partner would generate it.
secret="whsec_$(head -c 32 /dev/urandom | base64)"
export PARTNER_WEBHOOK_SECRET=$secret

WEBHOOK_SECRET=$secret start_bg "$work/receiver.log" \
  python3 "$ex/webhook_receiver.py" --port 0 --port-file "$work/rcv.port" \
  --log "$work/rcv.jsonl" --fail-first 1
rcv=$(port_of "$work/rcv.port")
sed -i "s|127.0.0.1:9091|127.0.0.1:$rcv|" "$c/20-partner.conf"

"$bin/cebridge" check -c "$c" || fail "cebridge check refused the example"
start_bg "$work/bridge.log" "$bin/cebridge" run -c "$c"
bridge=$last_pid
in=$(port_of "$work/in.port")

# The guide's own POST command, on the ephemeral port.
awk '/^    curl -si http:\/\/127.0.0.1:8080\/events/{on=1}
     on{line=$0; sub(/^    /, "", line); print line}
     on && /}}.$/{on=0}' "$src/docs/integration-guide.md" |
  sed "s|127.0.0.1:8080|127.0.0.1:$in|" >"$work/post.sh"
grep -q '"id":"sip-843e9ba4"' "$work/post.sh" || fail "guide POST not found"
bash "$work/post.sh" >"$work/post.out" 2>&1 || fail "guide POST failed"
grep -q "^HTTP/1.1 202" "$work/post.out" || fail "POST: $(cat "$work/post.out")"

# First attempt at once: the receiver answers 503; the event waits for the
# second step of the schedule (5s).
has() { grep -q "$1" "$work/rcv.jsonl" 2>/dev/null; }
wait_for 10 has '"status": 503' || fail "no first attempt"
retrying() { "$bin/cebridge" status sip-843e9ba4 -c "$c" | grep -q retrying; }
wait_for 4 retrying || fail "status is not retrying after the 503"
wait_for 20 has '"status": 200' || fail "no second attempt"
done_() { "$bin/cebridge" status sip-843e9ba4 -c "$c" |
  grep -qE "done +attempts 2 "; }
wait_for 10 done_ || fail "status: $("$bin/cebridge" status sip-843e9ba4 -c "$c")"

python3 - "$work/rcv.jsonl" <<'PY' || fail "attempts: $(cat "$work/rcv.jsonl")"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
assert [r["status"] for r in a] == [503, 200], a
assert all(r["verified"] for r in a), "a signature did not verify"
assert a[0]["webhook_id"] == a[1]["webhook_id"], "webhook-id changed"
assert a[0]["event_id"] == a[1]["event_id"] == "sip-843e9ba4"
gap = a[1]["t"] - a[0]["t"]
assert 4.5 <= gap <= 10, f"second attempt {gap:.1f}s after the first"
print(f"retry after {gap:.1f}s with the same webhook-id, both signatures valid")
PY

# The receiver refuses what the shared secret did not sign.
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$rcv/webhooks/sip" \
  -H 'webhook-id: forged-1' -H "webhook-timestamp: $(date +%s)" \
  -H 'webhook-signature: v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' \
  -H 'Content-Type: application/cloudevents+json' -d '{"id":"forged"}')
[ "$code" = 401 ] || fail "forged webhook answered $code"

kill -TERM "$bridge"
wait "$bridge" || fail "cebridge run did not exit 0 after SIGTERM"
echo "signed-webhooks: 1 passed, 0 failed"
