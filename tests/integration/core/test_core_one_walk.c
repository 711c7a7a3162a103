/* One walk per event through submit: each route is matched once per event
 * (the match that decides the contracts is the one journaled), the event is
 * encoded for the journal once, and an event a plugin validated is not
 * checked against the CloudEvents rules again. ceb_route_matches and
 * ceb_json_encode are counted with the linker's --wrap (CMakeLists.txt);
 * the test source submits on this thread, so the counts are exact. The
 * engine learns of the new deliveries from the store, not through the
 * runtime (ceb_engine_added, wrapped too, is never called). */
#include "delivery/ceb_engine.h"
#include "harness.h"
#include "router/ceb_route.h"

static atomic_long g_matches, g_encodes, g_added;

/* The store tells the engine of ingested deliveries (its ingest listener):
 * nothing climbs up to the runtime and back down through this call. */
void __real_ceb_engine_added(ceb_engine *e, size_t route, int64_t n);
void __wrap_ceb_engine_added(ceb_engine *e, size_t route, int64_t n) {
  atomic_fetch_add(&g_added, 1);
  __real_ceb_engine_added(e, route, n);
}

int __real_ceb_route_matches(const ceb_route *r, const char *from,
                             const ceb_event *ev);
int __wrap_ceb_route_matches(const ceb_route *r, const char *from,
                             const ceb_event *ev) {
  atomic_fetch_add(&g_matches, 1);
  return __real_ceb_route_matches(r, from, ev);
}

int __real_ceb_json_encode(const ceb_event *ev, char **out, size_t *len);
int __wrap_ceb_json_encode(const ceb_event *ev, char **out, size_t *len) {
  atomic_fetch_add(&g_encodes, 1);
  return __real_ceb_json_encode(ev, out, len);
}

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "[sink a]\nplugin = testsink\n"
    "[sink b]\nplugin = testsink\n"
    "[route r1]\nfrom = in\nto = a\nmatch.type = nl.edu.*\n"
    "[route r2]\nfrom = in\nto = b\nmatch.type = *.created\n"
    "[route r3]\nfrom = in\nto = b\nmatch.type = nl.other.*\n";

int main(void) {
  harness h;
  if (harness_open(&h, "onewalk", "profile = warn", k_conf) != 0)
    return ceb_test_done("integration_core_one_walk");
  testsink *a = harness_sink(&h, "a"), *b = harness_sink(&h, "b");

  /* one event, three routes, two of them match: three matches, one
   * encoding, two deliveries */
  atomic_store(&g_matches, 0);
  atomic_store(&g_encodes, 0);
  CHECK_INT(
      harness_submit(&h, "in", harness_event("w1", "nl.edu.x.created", NULL)),
      CEB_OK);
  CHECK_INT(atomic_load(&g_matches), 3);
  CHECK_INT(atomic_load(&g_encodes), 1);
  CHECK(harness_wait_count(a, 1));
  CHECK(harness_wait_count(b, 1));
  CHECK(harness_wait_state(&h, "w1", "r1", "done"));
  CHECK(harness_wait_state(&h, "w1", "r2", "done"));
  char buf[32];
  CHECK_STR(harness_state(&h, "w1", "r3", buf, sizeof buf), "");

  /* a batch of three: 3 x 3 matches, three encodings */
  ceb_event *batch[3] = {harness_event("w2", "nl.edu.b", NULL),
                         harness_event("w3", "nl.other.b", NULL),
                         harness_event("w4", "nl.edu.c.created", NULL)};
  atomic_store(&g_matches, 0);
  atomic_store(&g_encodes, 0);
  ceb_submit_result res = {0};
  CHECK_INT(testsource_submit(harness_source(&h, "in"), batch, 3, NULL, &res),
            CEB_OK);
  CHECK_INT(res.accepted, 3);
  CHECK_INT(atomic_load(&g_matches), 9);
  CHECK_INT(atomic_load(&g_encodes), 3);
  CHECK(harness_wait_state(&h, "w3", "r3", "done"));
  CHECK(harness_wait_state(&h, "w4", "r2", "done"));

  /* A refused event stops the walk before anything is encoded. */
  ceb_event *bad = harness_event("w5", "nl.edu.b", NULL);
  ceb_event_set(bad, "source", NULL);
  atomic_store(&g_encodes, 0);
  ceb_violations v;
  ceb_submit_opts so = {.struct_size = sizeof so, .violations = &v};
  CHECK_INT(testsource_submit(harness_source(&h, "in"), &bad, 1, &so, &res),
            CEB_EVALIDATION);
  CHECK_INT(atomic_load(&g_encodes), 0);
  CHECK_STR(v.items[0].code, "ce.source.missing");
  ceb_event_unref(bad);

  CHECK_INT(atomic_load(&g_added), 0);
  harness_close(&h);
  return ceb_test_done("integration_core_one_walk");
}
