#!/usr/bin/env bash
# Install to a staging prefix (and with DESTDIR), then build the plugin
# template out of tree against the installed SDK — with find_package and with
# pkg-config — and run its end-to-end test with the installed cebridge.
#   test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/cebridge include/ceb/ceb.h include/ceb/plugin.h \
         lib/pkgconfig/cebridge.pc lib/cmake/cebridge/cebridgeConfig.cmake \
         lib/cebridge/plugins/http.so lib/cebridge/plugins/pull.so \
         etc/cebridge/bridge.d/00-bridge.conf; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
ls "$prefix"/lib/libceb.so.1* >/dev/null
# Test plugins are not part of the product.
[ ! -e "$prefix/lib/cebridge/plugins/testsink.so" ] || { echo "test plugin installed"; exit 1; }
grep -q "store = $prefix/var/lib/cebridge/store.db" "$prefix/etc/cebridge/bridge.d/00-bridge.conf"

# DESTDIR staging (as packagers do): same tree under DESTDIR.
DESTDIR=$work/dest cmake --install "$build" --prefix /usr >/dev/null
[ -x "$work/dest/usr/bin/cebridge" ] && [ -e "$work/dest/usr/lib/cebridge/plugins/http.so" ] \
  && [ -e "$work/dest/etc/cebridge/bridge.d/00-bridge.conf" ] \
  && [ -e "$work/dest/etc/cebridge/bridge.d/10-intermediary.conf" ] \
  && [ -e "$work/dest/etc/cebridge/bridge.d/20-outbox.conf" ] \
  || { echo "DESTDIR install incomplete"; exit 1; }
grep -q "store = /var/lib/cebridge/store.db" "$work/dest/etc/cebridge/bridge.d/00-bridge.conf"
# Nothing lands outside DESTDIR's own tree (DESTDIR nested in itself).
[ ! -e "$work/dest$work" ] || { echo "DESTDIR nested: $work/dest$work"; exit 1; }

# The installed binary runs from its prefix and finds its plugins there.
"$prefix/bin/cebridge" version
"$prefix/bin/cebridge" plugins "$prefix/lib/cebridge/plugins/http.so"

# Out-of-tree template build with find_package, and its own test.
cmake -S "$src/contrib/plugin-template" -B "$work/tpl" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/tpl" >/dev/null
ctest --test-dir "$work/tpl" --output-on-failure

# And with pkg-config.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(realpath "$(pkg-config --variable=plugindir cebridge)")" = "$(realpath "$prefix/lib/cebridge/plugins")" ]
cc -std=c11 -shared -fPIC -fvisibility=hidden -Wall -Wextra -Werror \
   -o "$work/jsonl.so" "$src/contrib/plugin-template/jsonl_sink.c" \
   $(pkg-config --cflags --libs cebridge) -lpthread
"$prefix/bin/cebridge" plugins "$work/jsonl.so" | grep -q "^jsonl "
echo "install: 1 passed, 0 failed"
