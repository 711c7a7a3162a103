/* Fuzz target for the schema compiler (and the validator behind it).
 *
 * Input: one option byte, then JSON text. The byte picks the draft (auto,
 * 7, 2020) and whether formats are asserted. The JSON is either a schema,
 * or {"schema": S, "instance": I}. A compiled schema validates I (when
 * given), the schema document itself and a few fixed values. Remote refs
 * to http://fuzz/... resolve to copies of the input schema, exercising
 * document loading and cross-document cycles. */
#include "schema/ceb_schema.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *resolve(void *arg, const char *uri) {
  if (strncmp(uri, "http://fuzz/", 12) != 0) return NULL;
  return json_deep_copy(arg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  static const int drafts[] = {0, CEB_SCHEMA_DRAFT7, CEB_SCHEMA_DRAFT2020};
  json_error_t e;
  json_t *doc = json_loadb((const char *)data + 1, size - 1,
                           JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
  if (!doc) return 0;
  json_t *schema = doc, *inst = NULL;
  if (json_is_object(doc) && json_object_size(doc) == 2 &&
      json_object_get(doc, "schema") && json_object_get(doc, "instance")) {
    schema = json_object_get(doc, "schema");
    inst = json_object_get(doc, "instance");
  }
  ceb_schema_opts o = {.draft = drafts[data[0] % 3],
                       .assert_formats = (data[0] >> 2) & 1,
                       .resolve = resolve,
                       .resolve_arg = schema};
  ceb_schema *s = NULL;
  char err[256];
  if (ceb_schema_compile(schema, "http://fuzz/root.json", &o, &s, err,
                         sizeof err) == 0) {
    ceb_schema_result r;
    if (inst) ceb_schema_validate(s, inst, &r);
    ceb_schema_validate(s, schema, &r);
    static const char *const fixed[] = {"null",
                                        "0",
                                        "1.5",
                                        "\"\"",
                                        "\"2024-01-01T00:00:00Z\"",
                                        "[]",
                                        "[1, \"a\", [1], {}]",
                                        "{}",
                                        "{\"a\": 1, \"b\": [true]}"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
      json_t *v = json_loads(fixed[i], JSON_DECODE_ANY, &e);
      ceb_schema_validate(s, v, NULL);
      json_decref(v);
    }
    ceb_schema_free(s);
  }
  json_decref(doc);
  return 0;
}
