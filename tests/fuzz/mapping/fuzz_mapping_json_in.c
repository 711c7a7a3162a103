/* Fuzz target: the mapping worker's strict JSON reader (core/mapping/
 * mapper_json_in.c) against libjq's parser. Whatever bytes the reader
 * takes must give exactly libjq's value (jv_equal, and the same printed
 * text); bytes it does not take go to libjq itself, so they cannot
 * differ. A difference aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jv.h>

#include "mapping/mapper_json_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 20) return 0;
  jv got;
  if (!cebm_json_read_strict((const char *)data, size, &got)) return 0;
  jv want = jv_parse_sized((const char *)data, (int)size);
  if (!jv_is_valid(want)) {
    fprintf(stderr, "the strict reader took what libjq refuses\n");
    abort();
  }
  jv wd = jv_dump_string(jv_copy(want), 0);
  jv gd = jv_dump_string(jv_copy(got), 0);
  if (!jv_equal(jv_copy(wd), jv_copy(gd)) ||
      !jv_equal(jv_copy(want), jv_copy(got))) {
    fprintf(stderr, "want %s\ngot  %s\n", jv_string_value(wd),
            jv_string_value(gd));
    abort();
  }
  jv_free(wd);
  jv_free(gd);
  jv_free(want);
  jv_free(got);
  return 0;
}
