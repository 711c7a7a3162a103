/* Through the runtime: accepted events reach every matching route, status
 * follows them, duplicates are not delivered twice, invalid batches are
 * refused whole with the failing index, unrouted events are journaled and
 * marked, metrics count it all, and a restart resumes what was pending. */
#include "harness.h"

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "[sink out]\nplugin = testsink\n"
    "[sink audit]\nplugin = testsink\n"
    "[route main]\nfrom = in\nto = out\nmatch.type = nl.edu.*\n"
    "[route all-created]\nfrom = in\nto = audit\n"
    "match.type = *.created|*.deleted\n";

int main(void) {
  harness h;
  if (harness_open(&h, "flow", "profile = warn", k_conf) != 0)
    return ceb_test_done("integration_core_flow");
  testsink *out = harness_sink(&h, "out"), *audit = harness_sink(&h, "audit");
  CHECK(ceb_runtime_ready(h.rt));

  CHECK_INT(
      harness_submit(&h, "in", harness_event("e1", "nl.edu.x.created", NULL)),
      CEB_OK);
  CHECK_INT(harness_submit(&h, "in", harness_event("e2", "nl.edu.y", NULL)),
            CEB_OK);
  CHECK(harness_wait_count(out, 2));
  CHECK(harness_wait_count(audit, 1));
  CHECK(harness_wait_state(&h, "e1", "main", "done"));
  CHECK(harness_wait_state(&h, "e1", "all-created", "done"));
  CHECK(harness_wait_state(&h, "e2", "main", "done"));
  char buf[32];
  CHECK_STR(harness_state(&h, "e2", "all-created", buf, sizeof buf), "");
  testsink_seen seen;
  CHECK(testsink_get(out, 0, &seen));
  CHECK_STR(seen.route, "main");
  CHECK_INT(seen.attempt, 1);
  /* Idempotency-Key: a UUID v4 shape derived from (source, id, route) */
  CHECK_INT(strlen(seen.idem_key), 36);
  CHECK(seen.idem_key[8] == '-' && seen.idem_key[14] == '4' &&
        seen.idem_key[23] == '-');

  /* A duplicate (same source and id) is accepted but not delivered again. */
  ceb_event *dup = harness_event("e2", "nl.edu.y", NULL);
  ceb_submit_result res = {0};
  CHECK_INT(testsource_submit(harness_source(&h, "in"), &dup, 1, NULL, &res),
            CEB_OK);
  CHECK_INT(res.status, CEB_OK);
  CHECK_INT(res.accepted, 0);
  CHECK_INT(res.duplicates, 1);

  /* A batch with one invalid event is refused whole. */
  ceb_event *batch[3] = {harness_event("b1", "nl.edu.b", NULL),
                         harness_event("b2", "nl.edu.b", NULL),
                         harness_event("b3", "nl.edu.b", NULL)};
  ceb_event_set(batch[1], "type", NULL); /* missing type */
  ceb_violations v;
  size_t failed = 99;
  ceb_submit_opts so = {
      .struct_size = sizeof so, .violations = &v, .failed_index = &failed};
  CHECK_INT(testsource_submit(harness_source(&h, "in"), batch, 3, &so, &res),
            CEB_EVALIDATION);
  CHECK_INT(failed, 1);
  CHECK(v.errors >= 1);
  for (int i = 0; i < 3; i++)
    ceb_event_unref(batch[i]); /* refused: still ours */
  CHECK_STR(harness_state(&h, "b1", "main", buf, sizeof buf), "");

  /* Too large. */
  ceb_event *big = harness_event("big", "nl.edu.b", NULL);
  static char data[70000];
  memset(data, 'x', sizeof data - 1);
  ceb_event_set_data(big, data, sizeof data - 1, CEB_DATA_TEXT);
  CHECK_INT(testsource_submit(harness_source(&h, "in"), &big, 1, NULL, &res),
            CEB_ETOOLARGE);
  ceb_event_unref(big);

  /* Unrouted: accepted, journaled, marked. */
  CHECK_INT(harness_submit(&h, "in", harness_event("lost", "com.other", NULL)),
            CEB_OK);
  json_t *st = ceb_runtime_event_status(h.rt, "lost", NULL);
  CHECK_INT(json_array_size(st), 1);
  CHECK(json_is_true(json_object_get(json_array_get(st, 0), "unrouted")));
  json_decref(st);

  /* Metrics. */
  const char *lab = "role=\"source\",plugin=\"testsource\",instance=\"in\"";
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_events_accepted_total", lab),
            3);
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_events_duplicate_total", lab),
            1);
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_events_unrouted_total", lab),
            1);
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_events_delivered_total",
                            "route=\"main\""),
            2);

  /* Restart with a held delivery: it was in progress, it is retried. */
  testsink_hold(out, 1);
  CHECK_INT(harness_submit(&h, "in", harness_event("e3", "nl.edu.z", NULL)),
            CEB_OK);
  CHECK(harness_wait_count(out, 3));
  CHECK_STR(harness_state(&h, "e3", "main", buf, sizeof buf), "in-progress");
  /* The sink's drain gives it back as a retry: it waits in the store over
   * the restart and goes out when its retry is due (schedule: 5s). */
  CHECK_INT(harness_restart(&h), 0);
  out = harness_sink(&h, "out");
  CHECK_STR(harness_state(&h, "e3", "main", buf, sizeof buf), "retrying");
  harness_advance(&h, 4999);
  CHECK_STR(harness_state(&h, "e3", "main", buf, sizeof buf), "retrying");
  harness_advance(&h, 1);
  CHECK(harness_wait_state(&h, "e3", "main", "done"));
  CHECK_INT(testsink_count_id(out, "e3"), 1);
  json_t *routes = ceb_runtime_routes(h.rt);
  CHECK_INT(json_array_size(routes), 2);
  CHECK_STR(
      json_string_value(json_object_get(json_array_get(routes, 0), "circuit")),
      "closed");
  json_decref(routes);
  harness_close(&h);
  return ceb_test_done("integration_core_flow");
}
