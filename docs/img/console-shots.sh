#!/bin/sh
# Retakes the operator console screenshots in this folder (1366x768,
# headless chromium) by running the browser test with CEB_CONSOLE_SHOTS set:
#   docs/img/console-shots.sh [BUILD_DIR]      (default: build)
# Needs a build (cmake --build build) and chromium, node and npm.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
npm_dir=$build/tests/browser/console/npm
[ -f "$npm_dir/console_test.mjs" ] || { echo "no $npm_dir: configure and build first" >&2; exit 2; }
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
CEB_CONSOLE_SHOTS=$shots sh "$root/tests/browser/console/run.sh" "$npm_dir" "$build/bin/cebridge"
for f in overview sink-disabled dlq event contracts purge-confirm; do
  cp "$shots/console-$f.png" "$root/docs/img/console-$f.png"
done
echo "screenshots updated in $root/docs/img"
