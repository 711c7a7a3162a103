#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs ctest.
#   contrib/dev/test.sh              normal build in build/
#   contrib/dev/test.sh --sanitize   ASan + UBSan build in build-asan/
# Extra arguments after -- go to ctest (e.g. -- -L unit).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) build=build-asan; cmake_args+=(-DCEB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug); shift ;;
    --) shift; break ;;
    *) echo "usage: $0 [--sanitize] [-- ctest args]" >&2; exit 2 ;;
  esac
done

contrib/dev/deps.sh
cmake -S . -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The interop tests run `npm ci`. npm waits 5 minutes on a stalled fetch by
# default (a whole test timeout, seen once on a registry hiccup): give up
# on a fetch after 20 s and retry it, and reuse what the cache holds (the
# second build's tests need no network at all).
export npm_config_fetch_timeout=${npm_config_fetch_timeout:-20000}
export npm_config_fetch_retries=${npm_config_fetch_retries:-3}
export npm_config_prefer_offline=${npm_config_prefer_offline:-true}
cd "$build"
ctest --output-on-failure -j2 "$@"
