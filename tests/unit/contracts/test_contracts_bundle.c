/* $ref bundling: relative files (and refs local to them), recursive
 * schemas kept as internal refs, pure ref cycles reported, dangling refs
 * reported; the bundled document loads as a contract. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aa_doc.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "contracts/ceb_contract.h"

static char *read_any(void *arg, const char *uri, size_t *len, char *err,
                      size_t errlen) {
  int *calls = arg;
  (*calls)++;
  char *t = ceb_test_read_file(uri, len);
  if (!t) snprintf(err, errlen, "cannot read %s", uri);
  return t;
}

static json_t *bundle_file(const char *dir, const char *name, int *calls,
                           char *err, size_t errlen) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t len = 0;
  char *text = ceb_test_read_file(path, &len);
  if (!text) return NULL;
  json_t *doc = aa_parse(text, len, err, errlen);
  free(text);
  if (!doc) return NULL;
  aa_bundle_stats st;
  if (aa_bundle(doc, path, read_any, calls, 16, &st, err, errlen) != 0) {
    json_decref(doc);
    return NULL;
  }
  return doc;
}

int main(void) {
  char *dir = ceb_test_tmpdir("contracts-bundle");
  CHECK(dir != NULL);
  if (!dir) return ceb_test_done("unit_contracts_bundle");
  char sub[1024];
  snprintf(sub, sizeof sub, "%s/common", dir);
  CHECK(mkdir(sub, 0700) == 0);
  CHECK(ceb_test_write_file(dir, "api.yaml",
                            "asyncapi: 2.6.0\n"
                            "info: {title: t, version: 1.0.0}\n"
                            "channels:\n"
                            "  people:\n"
                            "    subscribe:\n"
                            "      message:\n"
                            "        $ref: 'common/msgs.yaml#/Person'\n"
                            "components:\n"
                            "  schemas:\n"
                            "    Local: {type: string}\n") == 0);
  CHECK(ceb_test_write_file(
            sub, "msgs.yaml",
            "Person:\n"
            "  name: person\n"
            "  payload:\n"
            "    $ref: '#/Node'\n"
            "Node:\n"
            "  type: object\n"
            "  required: [name]\n"
            "  properties:\n"
            "    name: {$ref: '../api.yaml#/components/schemas/Local'}\n"
            "    age: {$ref: './types.yaml#/Age'}\n"
            "    children:\n"
            "      type: array\n"
            "      items: {$ref: '#/Node'}\n") == 0);
  CHECK(ceb_test_write_file(sub, "types.yaml",
                            "Age: {type: integer, minimum: 0}\n") == 0);
  int calls = 0;
  char err[512] = "";
  json_t *doc = bundle_file(dir, "api.yaml", &calls, err, sizeof err);
  CHECK_MSG(doc != NULL, "bundle: %s", err);
  CHECK_INT(calls, 2); /* each document read once */
  if (doc) {
    json_t *bag = json_object_get(doc, "x-ceb-bundled");
    CHECK(json_is_object(bag));
    CHECK(json_object_get(bag, "Person") && json_object_get(bag, "Node") &&
          json_object_get(bag, "Age"));
    json_t *node = json_object_get(bag, "Node");
    json_t *items = json_object_get(
        json_object_get(json_object_get(node, "properties"), "children"),
        "items");
    /* Recursive: stays a ref to its own slot. */
    CHECK_STR(json_string_value(json_object_get(items, "$ref")),
              "#/x-ceb-bundled/Node");
    /* Back into the root document: a plain local ref. */
    CHECK_STR(json_string_value(json_object_get(
                  json_object_get(json_object_get(node, "properties"), "name"),
                  "$ref")),
              "#/components/schemas/Local");
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    ceb_contract *c = NULL;
    ceb_contract_opts o = {.compile = 1};
    CHECK_INT(ceb_contract_load("people", text, strlen(text), &o, &c, err,
                                sizeof err),
              CEB_OK);
    if (c) {
      CHECK_INT(c->nmsgs, 1);
      CHECK_STR(c->msgs[0].name, "person");
      CHECK(c->msgs[0].payload != NULL);
      json_t *ok = json_loads("{\"name\":\"a\",\"children\":[{\"name\":\"b\","
                              "\"age\":3}]}",
                              0, NULL);
      json_t *bad = json_loads("{\"name\":\"a\",\"children\":[{\"name\":\"b\","
                               "\"age\":-1}]}",
                               0, NULL);
      ceb_schema_result r;
      CHECK_INT(ceb_schema_validate(c->msgs[0].payload, ok, &r), 1);
      CHECK_INT(ceb_schema_validate(c->msgs[0].payload, bad, &r), 0);
      CHECK_STR(r.errors[0].instance_path, "/children/0/age");
      json_decref(ok);
      json_decref(bad);
      ceb_contract_free(c);
    }
    free(text);
    json_decref(doc);
  }

  /* A chain of refs that only refers to itself is an error. */
  CHECK(ceb_test_write_file(dir, "cycle.yaml",
                            "asyncapi: 3.0.0\n"
                            "info: {title: t, version: 1.0.0}\n"
                            "components:\n"
                            "  schemas:\n"
                            "    A: {$ref: 'common/loop.yaml#/B'}\n") == 0);
  CHECK(ceb_test_write_file(
            sub, "loop.yaml",
            "B: {$ref: '#/C'}\n"
            "C: {$ref: '../cycle.yaml#/components/schemas/A'}\n") == 0);
  err[0] = '\0';
  doc = bundle_file(dir, "cycle.yaml", &calls, err, sizeof err);
  CHECK(doc == NULL);
  CHECK_MSG(strstr(err, "cycle") != NULL, "error: %s", err);
  json_decref(doc);

  /* Local cycle inside the root, and a dangling ref. */
  const char *lc = "{\"a\":{\"$ref\":\"#/b\"},\"b\":{\"$ref\":\"#/a\"}}";
  json_t *loc = aa_parse(lc, strlen(lc), err, sizeof err);
  CHECK(loc && aa_bundle(loc, "/x/root.json", read_any, &calls, 4, NULL, err,
                         sizeof err) != 0);
  CHECK_MSG(strstr(err, "cycle") != NULL, "error: %s", err);
  json_decref(loc);
  CHECK(ceb_test_write_file(dir, "dangling.yaml",
                            "a: {$ref: 'common/types.yaml#/Nope'}\n") == 0);
  doc = bundle_file(dir, "dangling.yaml", &calls, err, sizeof err);
  CHECK(doc == NULL);
  CHECK_MSG(strstr(err, "nothing at") != NULL, "error: %s", err);
  json_decref(doc);
  doc = bundle_file(dir, "api.yaml", &calls, err, sizeof err);
  json_decref(doc);

  /* The contract side reports a cycle too. */
  ceb_contract *c = NULL;
  const char *cyc = "{\"asyncapi\":\"2.6.0\",\"info\":{\"title\":\"t\","
                    "\"version\":\"1.0.0\"},\"components\":{\"messages\":{"
                    "\"m\":{\"$ref\":\"#/components/messages/n\"},\"n\":{"
                    "\"$ref\":\"#/components/messages/m\"}}}}";
  CHECK_INT(ceb_contract_load("c", cyc, strlen(cyc), NULL, &c, err, sizeof err),
            CEB_EINVAL);
  CHECK_MSG(strstr(err, "cycle") != NULL, "error: %s", err);

  /* YAML details: core-schema scalars, duplicate keys, alias bombs. */
  const char *yt = "a: on\nb: 'true'\nc: true\nd: 1.5\ne: 007x\nf: ~\n";
  json_t *y = aa_parse(yt, strlen(yt), err, sizeof err);
  CHECK(y != NULL);
  CHECK_STR(json_string_value(json_object_get(y, "a")), "on");
  CHECK_STR(json_string_value(json_object_get(y, "b")), "true");
  CHECK(json_is_true(json_object_get(y, "c")));
  CHECK(json_is_real(json_object_get(y, "d")));
  CHECK(json_is_null(json_object_get(y, "f")));
  json_decref(y);
  CHECK(aa_parse("a: 1\na: 2\n", 10, err, sizeof err) == NULL);
  CHECK_MSG(strstr(err, "duplicate") != NULL, "error: %s", err);
  const char *bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
                     "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                     "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                     "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                     "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                     "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                     "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n";
  CHECK(aa_parse(bomb, strlen(bomb), err, sizeof err) == NULL);

  char uri[512];
  CHECK_INT(aa_uri_resolve("https://r.example/a/b/doc.yaml?x=1",
                           "../c/d.yaml#/x", uri, sizeof uri),
            0);
  CHECK_STR(uri, "https://r.example/a/c/d.yaml");
  CHECK_INT(aa_uri_resolve("https://r.example/a/doc.yaml", "/abs.json", uri,
                           sizeof uri),
            0);
  CHECK_STR(uri, "https://r.example/abs.json");
  CHECK_INT(
      aa_uri_resolve("/srv/x/api.yaml", "./common/../m.yaml", uri, sizeof uri),
      0);
  CHECK_STR(uri, "/srv/x/m.yaml");
  CHECK_INT(aa_uri_resolve("/srv/x/api.yaml", "#/a", uri, sizeof uri), 0);
  CHECK_STR(uri, "/srv/x/api.yaml");

  ceb_test_rmtree(dir);
  free(dir);
  return ceb_test_done("unit_contracts_bundle");
}
