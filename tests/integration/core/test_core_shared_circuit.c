/* A bridge on a shared store (PostgreSQL, other bridges claiming from the
 * same database) whose sink's circuit is open leaves the deliveries that
 * fall due to the other bridges, whose circuits may be closed: it does not
 * claim them to fail them at once (circuit.open, an attempt counted, the
 * next try pushed out), as a bridge alone on its store does
 * (docs/operator-guide.md, "Circuit breaker and the retry schedule"). */
#include <string.h>

#include <ceb/status.h>

#include "ceb_test_pg.h"
#include "harness.h"
#include "store/ceb_store.h"

static ceb_test_pg g_pg;

static ceb_outcome always_fail(void *arg, const ceb_delivery *d,
                               ceb_settle_info *info) {
  (void)arg;
  (void)d;
  (void)info;
  return CEB_RETRY;
}

static const char *circuit_of(harness *h, const char *route) {
  static char buf[32];
  json_t *routes = ceb_runtime_routes(h->rt);
  size_t i;
  json_t *r;
  buf[0] = '\0';
  json_array_foreach(routes, i, r) {
    if (strcmp(json_string_value(json_object_get(r, "route")), route) == 0)
      snprintf(buf, sizeof buf, "%s",
               json_string_value(json_object_get(r, "circuit")));
  }
  json_decref(routes);
  return buf;
}

static int bad_open(void *arg) {
  return strcmp(circuit_of(arg, "bad"), "open") == 0;
}

int main(void) {
  ceb_test_pg_require();
  if (ceb_test_pg_start(&g_pg, "shared-circuit") != 0) {
    CHECK(0);
    return ceb_test_done("integration_core_shared_circuit");
  }
  /* one worker: every pass looks at route bad before route good */
  static const char *conf =
      "[source in]\nplugin = testsource\n"
      "[sink out]\nplugin = testsink\ncircuit.failures = 1\n"
      "circuit.open_for = 1h\n"
      "[sink ok]\nplugin = testsink\n"
      "[route bad]\nfrom = in\nto = out\nmatch.type = nl.edu.bad\n"
      "retry.schedule = 0s 1h\n"
      "[route good]\nfrom = in\nto = ok\nmatch.type = nl.edu.good\n";
  harness h;
  if (harness_open_store(&h, "sharedcircuit", g_pg.uri, "workers = 1", conf) !=
      0) {
    ceb_test_pg_cleanup(&g_pg);
    return ceb_test_done("integration_core_shared_circuit");
  }
  testsink *out = harness_sink(&h, "out"), *ok = harness_sink(&h, "ok");
  testsink_script(out, always_fail, NULL);
  CHECK_INT(harness_submit(&h, "in", harness_event("e1", "nl.edu.bad", NULL)),
            CEB_OK);
  CHECK(harness_wait_count(out, 1));
  CHECK(ceb_test_wait(bad_open, &h, 30000));
  /* e2 falls due on route bad while its circuit is open */
  CHECK_INT(harness_submit(&h, "in", harness_event("e2", "nl.edu.bad", NULL)),
            CEB_OK);
  /* e3's claim comes in a pass that may have looked at route bad before
   * e2 was there; e4's in a later pass, which looked at it after */
  CHECK_INT(harness_submit(&h, "in", harness_event("e3", "nl.edu.good", NULL)),
            CEB_OK);
  CHECK(harness_wait_count(ok, 1));
  CHECK_INT(harness_submit(&h, "in", harness_event("e4", "nl.edu.good", NULL)),
            CEB_OK);
  CHECK(harness_wait_count(ok, 2));
  /* not claimed here: no attempt, still pending for whoever claims it */
  CHECK_INT(harness_route_int(&h, "e2", "bad", "attempts"), 0);
  char st[32];
  CHECK_STR(harness_state(&h, "e2", "bad", st, sizeof st), "pending");
  CHECK_INT(testsink_count(out), 1);
  /* another bridge on the database claims it at once */
  ceb_store_opts o = {.spec = g_pg.uri,
                      .group_max = 16,
                      .queue_max = 64,
                      .instance = "other",
                      .lease_ms = 60000,
                      .pool_size = 2};
  ceb_store *other = NULL;
  char err[512] = "";
  CHECK_INT(ceb_store_open(&o, &other, err, sizeof err), CEB_OK);
  if (other) {
    ceb_claim *c = NULL;
    size_t n = 0;
    CHECK_INT(ceb_store_claim(other, "bad", harness_now(&h), 8, 60000, &c, &n),
              CEB_OK);
    CHECK_INT(n, 1);
    ceb_claims_free(c, n);
    ceb_store_close(other);
  }
  harness_close(&h);
  ceb_test_pg_cleanup(&g_pg);
  return ceb_test_done("integration_core_shared_circuit");
}
