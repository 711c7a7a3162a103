#!/usr/bin/env bash
# contrib/deps/runtime.txt names exactly the Debian packages the installed
# bridge links: install into a DESTDIR, read what the binary, libceb and
# every plugin link directly (readelf NEEDED; the packages those libraries
# need in turn come with them through their own Depends, as dpkg-shlibdeps
# reasons), resolve each with ldd, map it to its package with dpkg -S, and
# compare with the list. A missing or an extra package fails.
#   test_runtime_deps.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest=$work/dest

DESTDIR=$dest cmake --install "$build" --prefix /usr >/dev/null

# Every ELF file of the install.
elves=()
while IFS= read -r -d '' f; do
  [ "$(head -c4 "$f" | od -An -c | tr -d ' \n')" = "177ELF" ] && elves+=("$f")
done < <(find "$dest" -type f -print0)
[ "${#elves[@]}" -ge 3 ] || { echo "no binaries installed in $dest"; exit 1; }
# The install's own libraries (libceb) are found in it, not in a package.
libdirs=$(for f in "${elves[@]}"; do dirname "$f"; done | sort -u | tr '\n' ':')

dpkg_owner() { # path -> package, trying the path dpkg recorded (usrmerge)
  local p=$1 cand
  for cand in "$p" "$(realpath "$p")" "${p#/usr}" "/usr$p" \
              "$(realpath "$p" | sed 's|^/usr||')"; do
    if out=$(dpkg -S "$cand" 2>/dev/null); then
      echo "${out%%:*}" | sed 's/:.*//; s/,.*//'
      return 0
    fi
  done
  return 1
}

: >"$work/linked"
fail=0
for f in "${elves[@]}"; do
  rel=${f#"$dest"}
  map=$(LD_LIBRARY_PATH=$libdirs ldd "$f" 2>&1) || { echo "ldd $rel: $map"; exit 1; }
  for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(awk -v l="$lib" '$1 == l && $2 == "=>" { print $3 }' <<<"$map")
    if [ -z "$path" ] || [ "$path" = "not" ]; then
      echo "FAIL: $rel needs $lib, which is not found"
      fail=1
      continue
    fi
    case "$path" in "$dest"/*) continue ;; esac
    if ! pkg=$(dpkg_owner "$path"); then
      echo "FAIL: $rel needs $lib ($path), which no Debian package owns"
      fail=1
      continue
    fi
    echo "$pkg $lib $rel" >>"$work/linked"
  done
done

cut -d' ' -f1 "$work/linked" | sort -u >"$work/need"
# The list without comments, without the packages marked "not linked".
grep -v '#[[:space:]]*not linked' "$src/contrib/deps/runtime.txt" \
  | sed -e 's/#.*//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u >"$work/list"
while read -r pkg; do
  echo "FAIL: contrib/deps/runtime.txt lacks $pkg, linked by:" \
       $(awk -v p="$pkg" '$1 == p { print $3 " (" $2 ")" }' "$work/linked" | sort -u)
  fail=1
done < <(comm -23 "$work/need" "$work/list")
while read -r pkg; do
  echo "FAIL: contrib/deps/runtime.txt lists $pkg, which nothing installed links" \
       "(mark it '# not linked: why' if it is needed all the same)"
  fail=1
done < <(comm -13 "$work/need" "$work/list")
[ "$fail" -eq 0 ] || exit 1
echo "runtime deps: $(wc -l <"$work/need") packages linked by ${#elves[@]} files, all listed, none extra"
