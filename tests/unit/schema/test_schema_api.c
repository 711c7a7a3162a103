/* Unit tests of the schema API: compile errors on bad schemas, error
 * reporting (instance and schema paths, keywords, caps), draft selection,
 * formats, external resources, recursion limits, numbers, and concurrent
 * validation from several threads. */
#include "ceb_test.h"
#include "schema/ceb_schema.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static json_t *J(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
  if (!j) fprintf(stderr, "bad test JSON: %s: %s\n", text, e.text);
  return j;
}

/* Compiles text; returns the status, keeps the message in err. */
static int compile_text(const char *text, const ceb_schema_opts *o,
                        ceb_schema **s, char *err, size_t errlen) {
  json_t *j = J(text);
  int rc = ceb_schema_compile(j, NULL, o, s, err, errlen);
  json_decref(j);
  return rc;
}

static int validate_text(const ceb_schema *s, const char *inst,
                         ceb_schema_result *r) {
  json_t *j = J(inst);
  int rc = ceb_schema_validate(s, j, r);
  json_decref(j);
  return rc;
}

static void test_compile_errors(void) {
  static const struct {
    const char *schema, *want;
  } bad[] = {
      {"{\"pattern\": \"a(b\"}", "invalid regular expression"},
      {"{\"patternProperties\": {\"[\": {}}}", "invalid regular expression"},
      {"{\"$ref\": \"#/$defs/missing\"}", "unresolvable $ref"},
      {"{\"$ref\": \"other.json\"}", "unresolvable $ref"},
      {"{\"properties\": {\"a\": {\"$ref\": \"#nope\"}}}",
       "#/properties/a/$ref"},
      {"{\"minLength\": \"3\"}", "#/minLength: must be a non-negative"},
      {"{\"maxItems\": -1}", "must be a non-negative integer"},
      {"{\"multipleOf\": 0}", "greater than 0"},
      {"{\"type\": \"float\"}", "#/type"},
      {"{\"required\": [1]}", "array of strings"},
      {"{\"allOf\": []}", "non-empty array"},
      {"{\"properties\": {\"a\": 5}}", "#/properties/a: a schema must be"},
      {"5", "object or a boolean"},
      {"{\"items\": [{}]}", "#/items: a schema must be"}, /* 2020-12 */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ceb_schema *s = (ceb_schema *)&s;
    char err[256];
    int rc = compile_text(bad[i].schema, NULL, &s, err, sizeof err);
    CHECK_MSG(rc == CEB_EINVAL, "%s: rc %d", bad[i].schema, rc);
    CHECK(s == NULL);
    CHECK_MSG(strstr(err, bad[i].want) != NULL, "%s: error \"%s\", want \"%s\"",
              bad[i].schema, err, bad[i].want);
  }
  ceb_schema *s = NULL;
  char err[64];
  CHECK_INT(ceb_schema_compile(NULL, NULL, NULL, &s, err, sizeof err),
            CEB_EINVAL);
  json_t *t = json_true();
  ceb_schema_opts o = {.draft = 4};
  CHECK_INT(ceb_schema_compile(t, NULL, &o, &s, err, sizeof err), CEB_EINVAL);
  CHECK(strstr(err, "unsupported draft") != NULL);
  CHECK_INT(ceb_schema_compile(t, NULL, NULL, NULL, NULL, 0), CEB_EINVAL);
  /* the same items array is fine in draft-07 */
  o.draft = CEB_SCHEMA_DRAFT7;
  CHECK_INT(compile_text("{\"items\": [{}]}", &o, &s, err, sizeof err), 0);
  ceb_schema_free(s);
  CHECK_INT(ceb_schema_validate(NULL, t, NULL), CEB_EINVAL);
  json_decref(t);
}

static void test_error_paths(void) {
  const char *schema =
      "{\"type\": \"object\", \"properties\": {\"items\": {\"type\": "
      "\"array\", \"items\": {\"$ref\": \"#/$defs/item\"}}}, \"$defs\": "
      "{\"item\": {\"type\": \"object\", \"required\": [\"name\"], "
      "\"properties\": {\"name\": {\"type\": \"string\"}, \"a/b~c\": "
      "{\"minimum\": 3}}}}}";
  ceb_schema *s = NULL;
  char err[256];
  CHECK_INT(compile_text(schema, NULL, &s, err, sizeof err), 0);
  if (!s) return;
  ceb_schema_result r;
  CHECK_INT(validate_text(s, "{\"items\": [{\"name\": \"x\"}]}", &r), 1);
  CHECK_INT(r.valid, 1);
  CHECK_INT(r.count, 0);
  CHECK_INT(validate_text(s,
                          "{\"items\": [{\"name\": \"a\"}, {\"name\": \"b\"}, "
                          "{\"name\": \"c\"}, {\"name\": 5}]}",
                          &r),
            0);
  CHECK_INT(r.valid, 0);
  CHECK_INT(r.count, 1);
  CHECK_STR(r.errors[0].instance_path, "/items/3/name");
  CHECK_STR(r.errors[0].schema_path, "#/$defs/item/properties/name/type");
  CHECK_STR(r.errors[0].keyword, "type");
  CHECK(strstr(r.errors[0].message, "integer") != NULL);
  /* escaped pointer tokens, several errors in evaluation order */
  CHECK_INT(validate_text(s, "{\"items\": [{\"a/b~c\": 1}]}", &r), 0);
  CHECK_INT(r.count, 2);
  CHECK_STR(r.errors[0].keyword, "required");
  CHECK_STR(r.errors[0].instance_path, "/items/0");
  CHECK_STR(r.errors[1].instance_path, "/items/0/a~1b~0c");
  CHECK_STR(r.errors[1].schema_path, "#/$defs/item/properties/a~1b~0c/minimum");
  CHECK_INT(validate_text(s, "[]", &r), 0);
  CHECK_STR(r.errors[0].instance_path, "");
  CHECK_STR(r.errors[0].schema_path, "#/type");
  /* a NULL result is allowed */
  CHECK_INT(validate_text(s, "{\"items\": 3}", NULL), 0);
  ceb_schema_free(s);
}

static void test_error_cap_and_branches(void) {
  char schema[1024] = "{\"required\": [";
  for (int i = 0; i < 20; i++)
    snprintf(schema + strlen(schema), sizeof schema - strlen(schema),
             "%s\"p%d\"", i ? "," : "", i);
  strcat(schema, "]}");
  ceb_schema *s = NULL;
  char err[256];
  CHECK_INT(compile_text(schema, NULL, &s, err, sizeof err), 0);
  ceb_schema_result r;
  CHECK_INT(validate_text(s, "{}", &r), 0);
  CHECK_INT(r.count, CEB_SCHEMA_MAX_ERRORS);
  CHECK_INT(r.total, 20);
  CHECK(strstr(r.errors[15].message, "\"p15\"") != NULL);
  ceb_schema_free(s);

  /* branch failures are summarised by the applicator */
  CHECK_INT(compile_text("{\"properties\": {\"v\": {\"anyOf\": [{\"type\": "
                         "\"string\"}, {\"minimum\": 10}]}}, \"not\": "
                         "{\"required\": [\"x\"]}}",
                         NULL, &s, err, sizeof err),
            0);
  CHECK_INT(validate_text(s, "{\"v\": 3, \"x\": 1}", &r), 0);
  CHECK_INT(r.count, 2);
  CHECK_STR(r.errors[0].keyword, "not"); /* in-place applicators first */
  CHECK_STR(r.errors[0].instance_path, "");
  CHECK_STR(r.errors[1].keyword, "anyOf");
  CHECK_STR(r.errors[1].instance_path, "/v");
  CHECK_STR(r.errors[1].schema_path, "#/properties/v/anyOf");
  CHECK_INT(validate_text(s, "{\"v\": 12}", &r), 1);
  ceb_schema_free(s);

  CHECK_INT(compile_text("{\"oneOf\": [{\"minimum\": 1}, {\"maximum\": 5}]}",
                         NULL, &s, err, sizeof err),
            0);
  CHECK_INT(validate_text(s, "3", &r), 0);
  CHECK_STR(r.errors[0].keyword, "oneOf");
  CHECK(strstr(r.errors[0].message, "more than one") != NULL);
  CHECK_INT(validate_text(s, "7", &r), 1);
  ceb_schema_free(s);
}

static void test_drafts(void) {
  ceb_schema *s = NULL;
  char err[256];
  /* draft-07 from $schema: $ref siblings are ignored */
  const char *d7 = "{\"$schema\": \"http://json-schema.org/draft-07/schema#\","
                   " \"definitions\": {\"s\": {\"type\": \"string\"}},"
                   " \"properties\": {\"a\": {\"$ref\": \"#/definitions/s\","
                   " \"maxLength\": 1}}}";
  CHECK_INT(compile_text(d7, NULL, &s, err, sizeof err), 0);
  CHECK_INT(ceb_schema_draft(s), 7);
  CHECK_INT(validate_text(s, "{\"a\": \"long\"}", NULL), 1);
  CHECK_INT(validate_text(s, "{\"a\": 1}", NULL), 0);
  ceb_schema_free(s);
  /* forced 2020-12: $ref applies alongside its siblings */
  ceb_schema_opts o = {.draft = CEB_SCHEMA_DRAFT2020};
  CHECK_INT(compile_text(d7, &o, &s, err, sizeof err), 0);
  CHECK_INT(ceb_schema_draft(s), 2020);
  CHECK_INT(validate_text(s, "{\"a\": \"long\"}", NULL), 0);
  ceb_schema_free(s);
  /* default without $schema: 2020-12 (prefixItems + unevaluatedItems) */
  CHECK_INT(compile_text("{\"prefixItems\": [{\"type\": \"integer\"}], "
                         "\"unevaluatedItems\": false}",
                         NULL, &s, err, sizeof err),
            0);
  CHECK_INT(ceb_schema_draft(s), 2020);
  CHECK_INT(validate_text(s, "[1]", NULL), 1);
  ceb_schema_result r;
  CHECK_INT(validate_text(s, "[1, 2]", &r), 0);
  CHECK_STR(r.errors[0].instance_path, "/1");
  CHECK_STR(r.errors[0].schema_path, "#/unevaluatedItems");
  ceb_schema_free(s);
}

static void test_formats(void) {
  const char *schema = "{\"properties\": {\"t\": {\"format\": \"date-time\"},"
                       " \"u\": {\"format\": \"uri\"}, \"x\": {\"format\":"
                       " \"no-such-format\"}}}";
  const char *bad = "{\"t\": \"2024-02-30T10:00:00Z\", \"u\": \"not a uri\","
                    " \"x\": \"anything\"}";
  ceb_schema *s = NULL;
  char err[256];
  CHECK_INT(compile_text(schema, NULL, &s, err, sizeof err), 0);
  CHECK_INT(validate_text(s, bad, NULL), 1); /* annotation only */
  ceb_schema_free(s);
  ceb_schema_opts o = {.assert_formats = 1};
  CHECK_INT(compile_text(schema, &o, &s, err, sizeof err), 0);
  ceb_schema_result r;
  CHECK_INT(validate_text(s, bad, &r), 0);
  CHECK_INT(r.count, 2);
  CHECK_STR(r.errors[0].keyword, "format");
  /* a leap second only at 23:59:60 UTC; formats ignore non-strings */
  CHECK_INT(validate_text(s,
                          "{\"t\": \"2024-02-29T23:59:60-00:00\", \"u\": "
                          "\"urn:nld:oin:00000001823288444000\", \"x\": 1}",
                          NULL),
            1);
  CHECK_INT(validate_text(s, "{\"t\": \"2024-02-29T22:59:60Z\"}", &r), 0);
  CHECK_STR(r.errors[0].instance_path, "/t");
  CHECK_INT(validate_text(s,
                          "{\"t\": \"2024-02-29T23:59:59+01:00\", \"u\": "
                          "\"urn:nld:oin:00000001823288444000\"}",
                          NULL),
            1);
  ceb_schema_free(s);
}

static json_t *resolver(void *arg, const char *uri) {
  int *calls = arg;
  (*calls)++;
  if (strcmp(uri, "https://example.nl/schemas/name.json") == 0)
    return J("{\"type\": \"string\", \"minLength\": 2}");
  return NULL;
}

/* Answers every URI with a document whose $ref builds a longer URI. */
static json_t *greedy(void *arg, const char *uri) {
  (void)uri;
  (*(int *)arg)++;
  return J("{\"$ref\": \"next/doc.json\"}");
}

static void test_external_limits(void) {
  int calls = 0;
  ceb_schema_opts o = {.resolve = greedy, .resolve_arg = &calls};
  json_t *schema = J("{\"$ref\": \"a/doc.json\"}");
  ceb_schema *s = NULL;
  char err[256];
  CHECK_INT(ceb_schema_compile(schema, "https://example.nl/root.json", &o, &s,
                               err, sizeof err),
            CEB_EINVAL);
  CHECK(s == NULL);
  CHECK_MSG(strstr(err, "external schema documents") ||
                strstr(err, "nested too deeply"),
            "%s", err);
  CHECK(calls > 0 && calls <= 256);
  json_decref(schema);
}

static void test_external_refs(void) {
  int calls = 0;
  json_t *res = J("{\"https://example.nl/schemas/id.json\": "
                  "{\"$defs\": {\"id\": {\"type\": \"integer\"}}}}");
  ceb_schema_opts o = {
      .resources = res, .resolve = resolver, .resolve_arg = &calls};
  json_t *schema = J("{\"properties\": {\"id\": {\"$ref\": "
                     "\"id.json#/$defs/id\"}, \"name\": {\"$ref\": "
                     "\"name.json\"}, \"again\": {\"$ref\": \"name.json\"}}}");
  ceb_schema *s = NULL;
  char err[256];
  CHECK_INT(ceb_schema_compile(schema, "https://example.nl/schemas/root.json",
                               &o, &s, err, sizeof err),
            0);
  CHECK_INT(calls, 1); /* resources first; each document fetched once */
  json_decref(schema); /* the compiled schema does not need the JSON */
  ceb_schema_result r;
  CHECK_INT(validate_text(s, "{\"id\": 3, \"name\": \"ab\"}", &r), 1);
  CHECK_INT(validate_text(s, "{\"id\": 3.5, \"name\": \"a\"}", &r), 0);
  CHECK_INT(r.count, 2);
  CHECK_STR(r.errors[0].schema_path,
            "https://example.nl/schemas/id.json#/$defs/id/type");
  ceb_schema_free(s);
  /* the resolver declines: unresolvable */
  schema = J("{\"$ref\": \"https://elsewhere.example/x.json\"}");
  CHECK_INT(ceb_schema_compile(schema, NULL, &o, &s, err, sizeof err),
            CEB_EINVAL);
  CHECK(strstr(err, "https://elsewhere.example/x.json") != NULL);
  json_decref(schema);
  json_decref(res);
}

/* A payload schema inside an AsyncAPI document, refs relative to it. */
static void test_pointer_into_document(void) {
  json_t *doc =
      J("{\"asyncapi\": \"3.0.0\", \"components\": {\"messages\": "
        "{\"order\": {\"payload\": {\"type\": \"object\", \"properties\": "
        "{\"lines\": {\"type\": \"array\", \"items\": {\"$ref\": "
        "\"#/components/schemas/line\"}}}}}}, \"schemas\": {\"line\": "
        "{\"required\": [\"sku\"]}}}}");
  ceb_schema_opts o = {.pointer = "/components/messages/order/payload"};
  ceb_schema *s = NULL;
  char err[256];
  CHECK_INT(ceb_schema_compile(doc, "https://example.nl/contracts/a.json", &o,
                               &s, err, sizeof err),
            0);
  ceb_schema_result r;
  CHECK_INT(validate_text(s, "{\"lines\": [{\"sku\": 1}]}", &r), 1);
  CHECK_INT(validate_text(s, "{\"lines\": [{}]}", &r), 0);
  CHECK_STR(r.errors[0].instance_path, "/lines/0");
  CHECK_STR(r.errors[0].schema_path, "#/components/schemas/line/required");
  CHECK_INT(validate_text(s, "[]", &r), 0);
  CHECK_STR(r.errors[0].schema_path,
            "#/components/messages/order/payload/type");
  ceb_schema_free(s);
  o.pointer = "/components/messages/nope/payload";
  CHECK_INT(ceb_schema_compile(doc, NULL, &o, &s, err, sizeof err), CEB_EINVAL);
  CHECK(strstr(err, "no schema at") != NULL);
  json_decref(doc);
}

static void test_recursion_and_values(void) {
  ceb_schema *s = NULL;
  char err[256];
  /* a tree: recursive $ref through properties */
  CHECK_INT(compile_text("{\"type\": \"object\", \"properties\": {\"kids\": "
                         "{\"type\": \"array\", \"items\": {\"$ref\": "
                         "\"#\"}}}}",
                         NULL, &s, err, sizeof err),
            0);
  CHECK_INT(validate_text(s, "{\"kids\": [{\"kids\": [{}]}, {}]}", NULL), 1);
  ceb_schema_result r;
  CHECK_INT(validate_text(s, "{\"kids\": [{\"kids\": [5]}]}", &r), 0);
  CHECK_STR(r.errors[0].instance_path, "/kids/0/kids/0");
  ceb_schema_free(s);
  /* a reference loop that never consumes the instance is a compile error */
  CHECK_INT(compile_text("{\"$defs\": {\"a\": {\"$ref\": \"#/$defs/b\"}, "
                         "\"b\": {\"anyOf\": [{\"$ref\": \"#/$defs/a\"}]}}, "
                         "\"$ref\": \"#/$defs/a\"}",
                         NULL, &s, err, sizeof err),
            CEB_EINVAL);
  CHECK(strstr(err, "reference cycle") != NULL);
  CHECK_INT(compile_text("{\"$ref\": \"#\"}", NULL, &s, err, sizeof err),
            CEB_EINVAL);
  /* instance nesting deeper than the evaluation limit: cannot complete */
  CHECK_INT(
      compile_text("{\"items\": {\"$ref\": \"#\"}}", NULL, &s, err, sizeof err),
      0);
  char deep[1024];
  memset(deep, '[', 400);
  memset(deep + 400, ']', 400);
  deep[800] = '\0';
  CHECK_INT(validate_text(s, deep, &r), CEB_ETOOLARGE);
  CHECK_INT(r.valid, 0);
  CHECK(strstr(r.errors[0].message, "nested too deeply") != NULL);
  CHECK_INT(validate_text(s, "[[[]]]", &r), 1);
  ceb_schema_free(s);
  /* exponential branching is bounded by the evaluation budget */
  char wide[4096] = "{\"$defs\": {";
  for (int i = 0; i < 40; i++)
    snprintf(wide + strlen(wide), sizeof wide - strlen(wide),
             "%s\"d%d\": {\"anyOf\": [{\"$ref\": \"#/$defs/d%d\"}, "
             "{\"$ref\": \"#/$defs/d%d\"}]}",
             i ? ", " : "", i, i + 1, i + 1);
  strcat(wide, ", \"d40\": false}, \"$ref\": \"#/$defs/d0\"}");
  CHECK_INT(compile_text(wide, NULL, &s, err, sizeof err), 0);
  int64_t t0 = ceb_test_now_ms();
  CHECK_INT(validate_text(s, "1", &r), CEB_ETOOLARGE);
  CHECK(strstr(r.errors[0].message, "stopped after") != NULL);
  CHECK(ceb_test_now_ms() - t0 < 20000);
  ceb_schema_free(s);
  /* numbers: 1.0 is an integer; big integers compare exactly */
  CHECK_INT(compile_text("{\"type\": \"integer\", \"maximum\": "
                         "9007199254740993}",
                         NULL, &s, err, sizeof err),
            0);
  CHECK_INT(validate_text(s, "1.0", NULL), 1);
  CHECK_INT(validate_text(s, "1.5", NULL), 0);
  CHECK_INT(validate_text(s, "9007199254740993", NULL), 1);
  CHECK_INT(validate_text(s, "9007199254740994", NULL), 0);
  ceb_schema_free(s);
  /* lengths count code points, not bytes; equality ignores key order */
  CHECK_INT(compile_text("{\"properties\": {\"s\": {\"maxLength\": 2}, \"o\":"
                         " {\"const\": {\"a\": 1, \"b\": [1.0]}}}}",
                         NULL, &s, err, sizeof err),
            0);
  CHECK_INT(validate_text(s, "{\"s\": \"\xc3\xa9\xc3\xa9\"}", NULL), 1);
  CHECK_INT(validate_text(s, "{\"s\": \"\xc3\xa9\xc3\xa9\xc3\xa9\"}", NULL), 0);
  CHECK_INT(validate_text(s, "{\"o\": {\"b\": [1], \"a\": 1.0}}", NULL), 1);
  CHECK_INT(validate_text(s, "{\"o\": {\"b\": [1], \"a\": 2}}", NULL), 0);
  ceb_schema_free(s);
  /* uniqueItems: JSON equality, and large arrays stay fast */
  CHECK_INT(compile_text("{\"uniqueItems\": true}", NULL, &s, err, sizeof err),
            0);
  CHECK_INT(
      validate_text(s, "[{\"a\": 1, \"b\": 2}, {\"b\": 2, \"a\": 1.0}]", &r),
      0);
  CHECK_STR(r.errors[0].message, "items 0 and 1 are equal");
  CHECK_INT(validate_text(s, "[1, \"1\", [1], {\"1\": 1}, true, null]", NULL),
            1);
  json_t *big = json_array();
  for (int i = 0; i < 30000; i++)
    json_array_append_new(big, json_integer(i));
  int64_t t1 = ceb_test_now_ms();
  CHECK_INT(ceb_schema_validate(s, big, NULL), 1);
  json_array_append_new(big, json_real(29998.0));
  CHECK_INT(ceb_schema_validate(s, big, &r), 0);
  CHECK_STR(r.errors[0].message, "items 29998 and 30000 are equal");
  CHECK(ceb_test_now_ms() - t1 < 5000);
  json_decref(big);
  ceb_schema_free(s);
  /* catastrophic backtracking (2^52 paths) ends at the regex budget */
  CHECK_INT(
      compile_text("{\"pattern\": \"^(a+)+$\"}", NULL, &s, err, sizeof err), 0);
  int64_t t2 = ceb_test_now_ms();
  CHECK_INT(
      validate_text(
          s, "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"", &r),
      0);
  CHECK_STR(r.errors[0].keyword, "pattern");
  CHECK(strstr(r.errors[0].message, "backtracking limit") != NULL);
  CHECK_INT(validate_text(s, "\"aaab\"", &r), 0);
  CHECK_STR(r.errors[0].message, "does not match the pattern");
  CHECK_INT(validate_text(s, "\"aaaa\"", NULL), 1);
  CHECK(ceb_test_now_ms() - t2 < 5000);
  ceb_schema_free(s);
  /* multipleOf on decimals */
  CHECK_INT(compile_text("{\"multipleOf\": 0.01}", NULL, &s, err, sizeof err),
            0);
  CHECK_INT(validate_text(s, "19.99", NULL), 1);
  CHECK_INT(validate_text(s, "19.995", NULL), 0);
  ceb_schema_free(s);
}

typedef struct worker {
  const ceb_schema *s;
  int mismatches;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  json_t *good = J("{\"id\": \"ab-12\", \"n\": [1, 2, 3]}");
  json_t *bad = J("{\"id\": \"AB-12\", \"n\": [1, 1]}");
  for (int i = 0; i < 2000; i++) {
    ceb_schema_result r;
    if (ceb_schema_validate(w->s, good, &r) != 1) w->mismatches++;
    if (ceb_schema_validate(w->s, bad, &r) != 0 || r.count != 2)
      w->mismatches++;
  }
  json_decref(good);
  json_decref(bad);
  return NULL;
}

static void test_threads(void) {
  ceb_schema *s = NULL;
  char err[256];
  CHECK_INT(compile_text("{\"properties\": {\"id\": {\"pattern\": "
                         "\"^[a-z]+-[0-9]+$\"}, \"n\": {\"uniqueItems\": "
                         "true}}}",
                         NULL, &s, err, sizeof err),
            0);
  pthread_t t[4];
  worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){s, 0};
    CHECK_INT(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK_INT(w[i].mismatches, 0);
  }
  ceb_schema_free(s);
}

int main(void) {
  test_compile_errors();
  test_error_paths();
  test_error_cap_and_branches();
  test_drafts();
  test_formats();
  test_external_refs();
  test_external_limits();
  test_pointer_into_document();
  test_recursion_and_values();
  test_threads();
  return ceb_test_done("schema_api");
}
