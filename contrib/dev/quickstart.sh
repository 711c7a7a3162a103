#!/usr/bin/env bash
# Installs dependencies, builds, and runs the bridge on bridge.d/ (the
# embedded default: HTTP intermediary on 127.0.0.1:8080, SQLite store in
# var/, admin API on 127.0.0.1:8081). Ctrl-C drains and stops it.
set -euo pipefail
cd "$(dirname "$0")/../.."
contrib/dev/deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)"
mkdir -p var
exec build/bin/cebridge run -c bridge.d "$@"
