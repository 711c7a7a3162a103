#!/usr/bin/env bash
# Every example config of docs/integration-guide.md passes `cebridge check`
# (the Kafka ones need no broker for that), and a secret the guide says to
# export is really required.
#   test_examples_check.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1 bin=$2
n=0
export PARTNER_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
export DUO_CLIENT_SECRET=example-client-secret
export MQTT_PASSWORD=example-password
# --no-init: the examples name their production machine's files
# (/etc/cebridge/tls/...) and brokers, which plugins' init would look at.
for d in "$src"/docs/examples/*/bridge.d; do
  "$bin/cebridge" check --no-init -c "$d" || { echo "FAIL: check $d"; exit 1; }
  n=$((n + 1))
done
[ $n -ge 4 ] || { echo "FAIL: only $n example configs found"; exit 1; }
if env -u DUO_CLIENT_SECRET "$bin/cebridge" check --no-init \
     -c "$src/docs/examples/kafka-to-partner/bridge.d" >/dev/null 2>&1; then
  echo "FAIL: kafka-to-partner passes check without DUO_CLIENT_SECRET"; exit 1
fi
echo "examples: $n configs checked, 1 passed, 0 failed"
