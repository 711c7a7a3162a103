#!/usr/bin/env bash
# A Standard Webhooks secret shorter than 24 bytes once decoded (the meemoo
# guide: "Willekeurig, minstens 24 bytes (192 bits)") is a config error with
# the file:line of its key, for the webhook sink (signing) and the
# intermediary (verifying); the guide's own 24-byte example secret passes.
#   test_secret_len.sh BIN_DIR PLUGIN_DIR
set -euo pipefail
bin=$1 plugins=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
guide=whsec_YWxvbmd3ZWJob29rbWVlbW9vc2VjcmV0 # b"alongwebhookmeemoosecret"
short23=whsec_YWxvbmd3ZWJob29rbWVlbW9vc2VjcmU  # the same minus its last byte

write() { # write IN_SECRETS OUT_SECRETS
  mkdir -p "$work/d"
  cat >"$work/d/bridge.conf" <<CONF
[bridge]
store = $work/var/cebridge.db

[source in]
plugin = http
listen = 127.0.0.1:0
auth = none
webhook.secrets = $1

[sink out]
plugin = http
url = https://partner.example.nl/hook
webhook.secrets = $2

[route r]
from = in
to = out
CONF
}
check() { "$bin/cebridge" check -c "$work/d" --plugin-dir "$plugins" >"$work/out" 2>&1; }

write "$guide" "$guide"
check || fail "24-byte secrets refused: $(cat "$work/out")"

write "$guide $short23" "$guide"
check && fail "a 23-byte intermediary secret passed check"
grep -q "bridge.conf:8: \[source:http:in\] webhook.secrets: secret #2 decodes to 23 bytes" "$work/out" ||
  fail "no file:line for the intermediary's secret: $(cat "$work/out")"

write "$guide" whsec_b3RoZXIga2V5
check && fail "a 9-byte sink secret passed check"
grep -q "bridge.conf:13: \[sink:http:out\] webhook.secrets: secret #1 decodes to 9 bytes" "$work/out" ||
  fail "no file:line for the sink's secret: $(cat "$work/out")"
grep -q "b3RoZXIga2V5" "$work/out" && fail "the secret was printed"
echo "secrets under 24 bytes refused with file:line; 24 bytes accepted"
