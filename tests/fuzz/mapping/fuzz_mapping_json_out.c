/* Fuzz target: the mapping worker's JSON writer (core/mapping/
 * mapper_json_out.c) against libjq's printer. Whatever bytes libjq parses
 * into a value (any input document a transport could send), the writer
 * must give exactly the text jv_dump_string(v, 0) gives; a difference
 * aborts. Each value is also taken apart (its first member or element,
 * every key of an object) so that nested values are compared alone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jv.h>

#include "mapping/mapper_json_out.h"

static void same(jv v) {
  jv want = jv_dump_string(jv_copy(v), 0);
  cebm_text t = {0};
  if (cebm_json_write(&t, v) != 0) abort(); /* out of memory: not here */
  size_t wl = (size_t)jv_string_length_bytes(jv_copy(want));
  if (t.len != wl || memcmp(t.p, jv_string_value(want), wl) != 0) {
    fprintf(stderr, "want %s\ngot  %.*s\n", jv_string_value(want), (int)t.len,
            t.p);
    abort();
  }
  jv_free(want);
  free(t.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 20) return 0;
  jv v = jv_parse_sized((const char *)data, (int)size);
  if (!jv_is_valid(v)) {
    jv_free(v);
    return 0;
  }
  jv_kind k = jv_get_kind(v);
  if (k == JV_KIND_ARRAY && jv_array_length(jv_copy(v)) > 0)
    same(jv_array_get(jv_copy(v), 0));
  if (k == JV_KIND_OBJECT) {
    jv keys = jv_keys(jv_copy(v));
    same(jv_copy(keys));
    int n = jv_array_length(jv_copy(keys));
    if (n) same(jv_object_get(jv_copy(v), jv_array_get(jv_copy(keys), 0)));
    jv_free(keys);
  }
  same(v);
  return 0;
}
