/* Pins resolved against a real register (SQLite store) from a checked
 * config: ^ and ~ pick the highest matching held version, an unresolvable
 * pin refuses to open (with the route and file:line) unless the route is in
 * warn mode, the hook checks events against the resolved version, and a
 * version stored later does not change what an opened set checks. */
#include <ceb/codec.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "contracts/ceb_contracts.h"
#include "router/ceb_route.h"

static char *doc(const char *version, const char *extra_required) {
  char *out = NULL;
  if (asprintf(&out,
               "{\"asyncapi\":\"3.0.0\",\"info\":{\"title\":\"e\","
               "\"version\":\"%s\"},\"components\":{\"messages\":{\"m\":{"
               "\"headers\":{\"properties\":{\"ce_type\":{\"const\":"
               "\"nl.edu.m\"}}},\"payload\":{\"type\":\"object\","
               "\"required\":[\"a\"%s]}}}}}",
               version, extra_required) < 0)
    return NULL;
  return out;
}

static void put(ceb_store *st, const char *version, const char *extra) {
  char *d = doc(version, extra);
  CHECK_INT(
      ceb_store_contract_put(st, "enrol", version, d, strlen(d), "test", 1),
      CEB_OK);
  free(d);
}

static ceb_conf *conf_of(const char *dir, const char *routes) {
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\n\n"
           "[source in]\nplugin = http\n\n[sink out]\nplugin = pull\n\n%s",
           dir, routes);
  char cdir[600];
  snprintf(cdir, sizeof cdir, "%s/conf", dir);
  ceb_test_rmtree(cdir);
  mkdir(cdir, 0700);
  ceb_test_write_file(cdir, "00.conf", text);
  ceb_conf *conf = NULL;
  ceb_conf_errors *errs = calloc(1, sizeof *errs);
  int rc = ceb_conf_load(cdir, &conf, errs);
  if (rc == CEB_OK) rc = ceb_conf_check(conf, NULL, NULL, errs);
  if (rc != CEB_OK) ceb_conf_errors_print(errs, stderr);
  CHECK_INT(rc, CEB_OK);
  free(errs);
  if (rc != CEB_OK) {
    ceb_conf_free(conf);
    return NULL;
  }
  return conf;
}

static int check(ceb_contracts *cs, const char *route, const char *data,
                 ceb_violations *v) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"urn:x\","
           "\"type\":\"nl.edu.m\",\"datacontenttype\":\"application/json\","
           "\"data\":%s}",
           data);
  ceb_event *ev = NULL;
  ceb_error e;
  CHECK_INT(ceb_json_decode(json, strlen(json), &ev, &e), CEB_OK);
  ceb_route r = {.name = (char *)route, .contract = "enrol@^1"};
  memset(v, 0, sizeof *v);
  int rc = ev ? ceb_contracts_check(cs, &r, ev, v) : -1;
  ceb_event_unref(ev);
  return rc;
}

int main(void) {
  char *dir = ceb_test_tmpdir("contracts-pins");
  char path[600];
  snprintf(path, sizeof path, "%s/store.db", dir);
  ceb_store_opts so = {.spec = path, .group_max = 8, .queue_max = 64};
  ceb_store *st = NULL;
  char err[512] = "";
  CHECK_INT(ceb_store_open(&so, &st, err, sizeof err), CEB_OK);
  if (!st) return ceb_test_done("unit_contracts_pins");
  put(st, "1.0.0", "");
  put(st, "1.1.0", ",\"b\"");
  put(st, "1.2.0-rc.1", "");
  put(st, "2.0.0", "");

  ceb_conf *conf = conf_of(dir, "[route caret]\nfrom = in\nto = out\n"
                                "contract = enrol@^1\n\n"
                                "[route tilde]\nfrom = in\nto = out\n"
                                "contract = enrol@~1.0\n\n"
                                "[route lax]\nfrom = in\nto = out\n"
                                "contract = other@^1\n"
                                "contract.mode = warn\n");
  ceb_contracts *cs = NULL;
  if (conf) {
    CHECK_INT(ceb_contracts_open(conf, st, &cs, err, sizeof err), CEB_OK);
    CHECK_STR(ceb_contracts_resolved(cs, "caret"), "1.1.0");
    CHECK_STR(ceb_contracts_resolved(cs, "tilde"), "1.0.0");
    CHECK(ceb_contracts_resolved(cs, "lax") == NULL);
    ceb_violations v;
    /* 1.1.0 requires b as well. */
    CHECK_INT(check(cs, "caret", "{\"a\":1,\"b\":2}", &v), CEB_OK);
    CHECK_INT(check(cs, "caret", "{\"a\":1}", &v), CEB_EVALIDATION);
    CHECK_STR(v.items[0].code, "contract.payload");
    CHECK_INT(check(cs, "tilde", "{\"a\":1}", &v), CEB_OK);
    CHECK_INT(check(cs, "lax", "{}", &v), CEB_EVALIDATION);
    CHECK_STR(v.items[0].code, "contract.unresolved");
    /* 1.3.0 arrives: the opened set keeps checking against 1.1.0. */
    put(st, "1.3.0", "");
    CHECK_INT(check(cs, "caret", "{\"a\":1}", &v), CEB_EVALIDATION);
    CHECK_STR(ceb_contracts_resolved(cs, "caret"), "1.1.0");
    ceb_contracts_free(cs);
    /* ...until the set is opened again (restart / reload). */
    CHECK_INT(ceb_contracts_open(conf, st, &cs, err, sizeof err), CEB_OK);
    CHECK_STR(ceb_contracts_resolved(cs, "caret"), "1.3.0");
    CHECK_INT(check(cs, "caret", "{\"a\":1}", &v), CEB_OK);
    ceb_contracts_free(cs);
    ceb_conf_free(conf);
  }

  /* Strict mode: the set refuses to open, naming the route and place. */
  conf = conf_of(dir, "[route strict]\nfrom = in\nto = out\n"
                      "contract = enrol@^3\n");
  if (conf) {
    cs = NULL;
    CHECK_INT(ceb_contracts_open(conf, st, &cs, err, sizeof err), CEB_ECONFIG);
    CHECK(cs == NULL);
    CHECK_MSG(strstr(err, "route strict") && strstr(err, "00.conf:") &&
                  strstr(err, "enrol@^3"),
              "err: %s", err);
    ceb_conf_free(conf);
  }
  ceb_store_close(st);
  ceb_test_rmtree(dir);
  free(dir);
  return ceb_test_done("unit_contracts_pins");
}
