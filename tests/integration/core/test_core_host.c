/* The rest of the host table through the runtime: idempotency records per
 * client (new, in flight, replay with the stored response, mismatch),
 * the contract register (new, duplicate, conflict only for the contracts
 * role), metrics with the instance's labels, now_ms from the injected
 * clock, and refusals of bad arguments. */
#include "harness.h"

static const char *k_conf = "[source in]\nplugin = testsource\n"
                            "[sink out]\nplugin = testsink\n"
                            "[route r]\nfrom = in\nto = out\n";

static int swept(void *arg) {
  harness *h = arg;
  json_t *st = ceb_runtime_event_status(h->rt, "x1", NULL);
  int gone = st && json_array_size(st) == 0;
  json_decref(st);
  return gone;
}

int main(void) {
  harness h;
  if (harness_open(&h, "host", "idempotency.ttl = 1h\nretention = 1h",
                   k_conf) != 0)
    return ceb_test_done("integration_core_host");
  testsource *src = harness_source(&h, "in");
  const ceb_host *host = testsource_host(src);
  ceb_instance *inst = testsource_instance(src);

  CHECK_INT(host->struct_size, sizeof(ceb_host));
  CHECK_INT(host->abi_major, CEB_ABI_MAJOR);
  CHECK_INT(host->now_ms(inst), HARNESS_T0);
  harness_advance(&h, 5);
  CHECK_INT(host->now_ms(inst), HARNESS_T0 + 5);

  /* idempotency */
  ceb_idem_record rec = {.struct_size = sizeof rec};
  CHECK_INT(host->idem_begin(inst, "client-a", "key-1", "fp", &rec), CEB_OK);
  CHECK_INT(rec.state, CEB_IDEM_NEW);
  CHECK_INT(host->idem_begin(inst, "client-a", "key-1", "fp", &rec), CEB_OK);
  CHECK_INT(rec.state, CEB_IDEM_IN_FLIGHT);
  CHECK_INT(host->idem_begin(inst, "client-b", "key-1", "fp", &rec), CEB_OK);
  CHECK_INT(rec.state, CEB_IDEM_NEW); /* other client, other key space */
  host->idem_abort(inst, "client-b", "key-1");
  CHECK_INT(host->idem_finish(inst, "client-a", "key-1", 202,
                              "application/json", "{\"a\":1}", 7),
            CEB_OK);
  CHECK_INT(host->idem_begin(inst, "client-a", "key-1", "fp", &rec), CEB_OK);
  CHECK_INT(rec.state, CEB_IDEM_REPLAY);
  CHECK_INT(rec.http_status, 202);
  CHECK_STR(rec.content_type, "application/json");
  CHECK_INT(rec.body_len, 7);
  ceb_free(rec.content_type);
  ceb_free(rec.body);
  CHECK_INT(host->idem_begin(inst, "client-a", "key-1", "other", &rec), CEB_OK);
  CHECK_INT(rec.state, CEB_IDEM_MISMATCH);
  /* expired after the configured ttl (1 h) */
  harness_advance(&h, 3600 * 1000);
  CHECK_INT(host->idem_begin(inst, "client-a", "key-1", "fp2", &rec), CEB_OK);
  CHECK_INT(rec.state, CEB_IDEM_NEW);
  ceb_idem_record small = {.struct_size = 4};
  CHECK_INT(host->idem_begin(inst, "c", "k", "fp", &small), CEB_EINVAL);

  /* contract register: only the contracts role may write */
  CHECK_INT(host->contract_put(inst, "c", "1.0.0", "{}", 2, "x"),
            CEB_EFORBIDDEN);
  ceb_instance contracts = {
      .name = "reg", .role = CEB_ROLE_CONTRACTS, .rt = inst->rt};
  CHECK_INT(host->contract_put(&contracts, "duo", "1.0.0", "{\"a\":1}", 7,
                               "https://registry.example/duo"),
            CEB_OK);
  CHECK_INT(host->contract_put(&contracts, "duo", "1.0.0", "{\"a\":1}", 7,
                               "https://registry.example/duo"),
            CEB_EDUPLICATE);
  CHECK_INT(host->contract_put(&contracts, "duo", "1.0.0", "{\"a\":2}", 7,
                               "https://registry.example/duo"),
            CEB_ECONFLICT);
  json_t *l = ceb_store_contract_list(ceb_runtime_store(h.rt), "duo");
  CHECK_INT(
      json_integer_value(json_object_get(json_array_get(l, 0), "conflict")), 1);
  json_decref(l);
  /* ABI 1.2: any role reads the register; the listing holds no provenance
   * and no conflict record */
  CHECK(CEB_HOST_HAS(host, contract_get) && CEB_HOST_HAS(host, contract_list));
  char *doc = NULL, *list = NULL;
  size_t doc_len = 0, list_len = 0;
  CHECK_INT(host->contract_get(inst, "duo", "1.0.0", &doc, &doc_len), CEB_OK);
  CHECK(doc && doc_len == 7 && strcmp(doc, "{\"a\":1}") == 0);
  free(doc);
  doc = NULL;
  CHECK_INT(host->contract_get(inst, "duo", "2.0.0", &doc, &doc_len),
            CEB_ENOTFOUND);
  CHECK(doc == NULL);
  CHECK_INT(host->contract_list(inst, NULL, &list, &list_len), CEB_OK);
  CHECK(list && list_len == strlen(list));
  CHECK_MSG(list && strstr(list, "\"name\":\"duo\"") &&
                strstr(list, "\"version\":\"1.0.0\"") &&
                strstr(list, "\"sha256\":") &&
                !strstr(list, "registry.example") && !strstr(list, "conflict"),
            "%s", list ? list : "(null)");
  free(list);
  CHECK_INT(host->contract_list(inst, "nothing", &list, &list_len), CEB_OK);
  CHECK_STR(list, "[]");
  free(list);

  /* metrics: prefixed, with the instance's labels */
  host->metric(inst, CEB_METRIC_COUNTER, "http_requests_total", "code=\"202\"",
               2);
  host->metric(inst, CEB_METRIC_GAUGE, "connections", NULL, 7);
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_http_requests_total",
                            "role=\"source\",plugin=\"testsource\","
                            "instance=\"in\",code=\"202\""),
            2);
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_connections",
                            "role=\"source\",plugin=\"testsource\","
                            "instance=\"in\""),
            7);
  host->log(inst, CEB_LOG_INFO, "hello from %s", "the test");

  /* bad submits */
  ceb_event *ev = harness_event("x1", "nl.test.x", NULL);
  CHECK_INT(host->submit(inst, &ev, 0, NULL, NULL, NULL), CEB_EINVAL);
  CHECK_INT(host->submit(inst, NULL, 1, NULL, NULL, NULL), CEB_EINVAL);
  ceb_instance *sink = NULL;
  for (size_t i = 0; i < h.ninst; i++)
    if (h.inst[i]->role == CEB_ROLE_SINK) sink = h.inst[i];
  ceb_submit_result res;
  CHECK_INT(testsource_submit(src, &ev, 1, NULL, &res), CEB_OK);
  ev = harness_event("x2", "nl.test.x", NULL);
  /* a sink may not submit */
  CHECK(sink != NULL);
  if (sink) CHECK_INT(host->submit(sink, &ev, 1, NULL, NULL, NULL), CEB_EINVAL);
  ceb_event_unref(ev);
  /* an unknown delivery pointer is ignored, not followed */
  ceb_delivery bogus = {.struct_size = sizeof bogus};
  ceb_settle_info info = {.struct_size = sizeof info, .outcome = CEB_ACK};
  host->settle(sink, &bogus, &info);
  CHECK(harness_wait_state(&h, "x1", "r", "done"));

  /* Retention (1 h here): the sweeper removes the settled event after it,
   * not before. */
  char buf[32];
  harness_advance(&h, 3600 * 1000 - 1000);
  CHECK_STR(harness_state(&h, "x1", "r", buf, sizeof buf), "done");
  harness_advance(&h, 2000);
  CHECK(ceb_test_wait(swept, &h, 10000));
  harness_close(&h);
  return ceb_test_done("integration_core_host");
}
