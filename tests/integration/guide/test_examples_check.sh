#!/usr/bin/env bash
# The integration guide's example configs (docs/examples/*/bridge.d) are all
# there, and a secret the guide says to export is really required. That each
# passes `cebridge check` is integration_doc_configs' job
# (tests/integration/docs/check_doc_configs.py checks every config of the
# docs), not repeated here.
#   test_examples_check.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1 bin=$2
n=0
export PARTNER_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
export DUO_CLIENT_SECRET=example-client-secret
export MQTT_PASSWORD=example-password
for d in "$src"/docs/examples/*/bridge.d; do
  [ -d "$d" ] && n=$((n + 1))
done
[ $n -ge 4 ] || { echo "FAIL: only $n example configs found"; exit 1; }
# --no-init: the examples name their production machine's files
# (/etc/cebridge/tls/...) and brokers, which plugins' init would look at.
if env -u DUO_CLIENT_SECRET "$bin/cebridge" check --no-init \
     -c "$src/docs/examples/kafka-to-partner/bridge.d" >/dev/null 2>&1; then
  echo "FAIL: kafka-to-partner passes check without DUO_CLIENT_SECRET"; exit 1
fi
echo "examples: $n configs present; the missing secret is refused"
