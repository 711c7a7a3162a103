#!/bin/sh
# ctest entry of browser_console: skips (77) without chromium, installs the
# pinned npm packages (package-lock.json, `npm ci`) into the build tree when
# missing, then runs console_test.mjs against the built cebridge.
# $1: npm directory (build tree), $2: the cebridge binary.
set -eu
chromium=${CEB_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "browser_console: skipped: $chromium not installed (apt-get install chromium)"
  exit 77
fi
cd "$1"
if [ ! -d node_modules/puppeteer-core ] || [ ! -d node_modules/axe-core ]; then
  timeout 300 npm ci --no-audit --no-fund --loglevel=error >&2 || {
    echo "browser_console: npm ci failed: is the npm registry reachable?" >&2
    exit 1
  }
fi
exec timeout 280 node console_test.mjs "$2"
