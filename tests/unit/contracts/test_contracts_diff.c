/* contracts diff: what makes events valid under A invalid under B is
 * BREAKING (type narrowed, pattern added, additionalProperties closed,
 * message removed, lower bound raised); widening is not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "contracts/ceb_contracts.h"

static ceb_contract *load(const char *version, const char *schema,
                          const char *extra_msg) {
  char doc[2048];
  snprintf(doc, sizeof doc,
           "{\"asyncapi\":\"3.0.0\",\"info\":{\"title\":\"d\",\"version\":"
           "\"%s\"},\"components\":{\"messages\":{\"m\":{\"payload\":%s}%s}}}",
           version, schema, extra_msg);
  ceb_contract *c = NULL;
  char err[256] = "";
  CHECK_MSG(ceb_contract_load("d", doc, strlen(doc), NULL, &c, err,
                              sizeof err) == CEB_OK,
            "load: %s", err);
  return c;
}

static size_t diff(const char *sa, const char *sb, const char *ma,
                   const char *mb, char **text) {
  ceb_contract *a = load("1.0.0", sa, ma), *b = load("2.0.0", sb, mb);
  size_t len = 0, n = 0;
  FILE *f = open_memstream(text, &len);
  if (a && b && f) n = ceb_contract_diff(a, b, f);
  if (f) fclose(f);
  ceb_contract_free(a);
  ceb_contract_free(b);
  return n;
}

int main(void) {
  char *t = NULL;
  CHECK_INT(diff("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
                 "\"number\"}}}",
                 "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
                 "\"string\"}}}",
                 "", "", &t),
            1);
  CHECK_MSG(strstr(t, "BREAKING payload/n: type changed from \"number\" to "
                      "\"string\""),
            "%s", t);
  free(t);
  /* integer -> number widens: not breaking */
  CHECK_INT(diff("{\"type\":\"integer\"}", "{\"type\":\"number\"}", "", "", &t),
            0);
  CHECK_MSG(strstr(t, "changed  payload: type changed"), "%s", t);
  free(t);
  CHECK_INT(diff("{\"type\":\"string\"}",
                 "{\"type\":\"string\",\"pattern\":\"^a\"}", "", "", &t),
            1);
  CHECK_MSG(strstr(t, "pattern added"), "%s", t);
  free(t);
  CHECK_INT(diff("{\"type\":\"object\"}",
                 "{\"type\":\"object\",\"additionalProperties\":false}", "", "",
                 &t),
            1);
  CHECK_MSG(strstr(t, "additional properties no longer allowed"), "%s", t);
  free(t);
  CHECK_INT(diff("{\"minimum\":1}", "{\"minimum\":0}", "", "", &t), 0);
  CHECK_MSG(strstr(t, "wider range: minimum 1 -> 0"), "%s", t);
  free(t);
  CHECK_INT(diff("{\"minLength\":1}", "{\"minLength\":3}", "", "", &t), 1);
  CHECK_MSG(strstr(t, "narrower range: minLength 1 -> 3"), "%s", t);
  free(t);
  CHECK_INT(diff("{}", "{}", ",\"gone\":{\"payload\":{}}",
                 ",\"added\":{\"payload\":{}}", &t),
            1);
  CHECK_MSG(strstr(t, "+ added") && strstr(t, "- gone") &&
                strstr(t, "BREAKING message removed"),
            "%s", t);
  free(t);
  CHECK_INT(diff("{\"type\":\"string\"}", "{\"type\":\"string\"}", "", "", &t),
            0);
  CHECK_MSG(strstr(t, "no differences"), "%s", t);
  free(t);
  return ceb_test_done("unit_contracts_diff");
}
