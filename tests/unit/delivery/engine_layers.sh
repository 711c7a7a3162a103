#!/bin/sh
# engine_layers: the delivery engine's files call one way only, down the
# list in core/delivery/engine_internal.h. Reads the symbols of the
# ceb_delivery archive ($1): every engine_*.o's undefined cebe_*/ceb_engine_*
# symbol that another engine file defines must be defined by a file lower
# in the list; an engine file missing from the list fails too.
set -eu
lib=$1
order="engine_core engine_preclaim engine_take engine_settle engine_keys engine_dlq_forward engine_send
engine_sinkstate engine_base engine_deadletter engine_ptrset engine_map"
rank() {
  i=0
  for f in $order; do
    [ "$f" = "$1" ] && { echo $i; return; }
    i=$((i + 1))
  done
  echo -1
}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# lines: object symbol-type symbol (engine files only)
nm -A "$lib" 2>/dev/null | sed -n 's/^[^:]*:\(engine_[a-z_]*\)\.c\.o: *[0-9a-f]* *\([TU]\) \(.*\)$/\1 \2 \3/p' \
  | grep -E ' (cebe_|ceb_engine_)' > "$tmp" || true
[ -s "$tmp" ] || { echo "engine_layers: no engine symbols in $lib"; exit 1; }
fail=0
for obj in $(cut -d' ' -f1 "$tmp" | sort -u); do
  if [ "$(rank "$obj")" -lt 0 ]; then
    echo "engine_layers: $obj.c is not in the layer list (engine_internal.h)"
    fail=1
  fi
done
checked=0
while read -r obj type sym; do
  [ "$type" = U ] || continue
  def=$(awk -v s="$sym" '$2 == "T" && $3 == s { print $1 }' "$tmp")
  [ -n "$def" ] || continue
  checked=$((checked + 1))
  if [ "$(rank "$def")" -le "$(rank "$obj")" ]; then
    echo "engine_layers: $obj.c calls $sym of $def.c, which is not below it"
    fail=1
  fi
done < "$tmp"
echo "engine_layers: $checked calls between engine files checked"
exit $fail
