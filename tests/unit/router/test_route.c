/* Route parsing from config and matching: exact / prefix / suffix /
 * alternatives, every key must hold, extensions, from-lists, order keys,
 * dlq and receipts destinations, and clear errors for bad values. */
#include <ceb/ceb.h>

#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"
#include "router/ceb_route.h"
#include "router/ceb_route_batch.h"

static ceb_config *cfg_of(const char *const *kv) {
  ceb_config *c = cebi_config_new("r");
  for (; kv[0]; kv += 2)
    cebi_config_put(c, kv[0], kv[1], "test.conf", 1);
  cebi_config_set_spec(c, ceb_spec_route, NULL);
  return c;
}

/* The route's typed fields, bound as ceb_conf_check binds them. */
static ceb_route_cfg bound(const ceb_config *c) {
  ceb_route_cfg rc;
  char why[128];
  CHECK_INT(ceb_config_bind(c, ceb_bind_route, &rc, why, sizeof why), CEB_OK);
  rc.cfg = c;
  return rc;
}

static int parse(const char *name, const ceb_config *c, ceb_route **out,
                 char *err, size_t errlen) {
  ceb_route_cfg rc = bound(c);
  return ceb_route_parse(name, &rc, out, err, errlen);
}

static ceb_event *ev_of(const char *type, const char *subject,
                        const char *ext) {
  ceb_event *e = ceb_event_new();
  ceb_event_set(e, "specversion", "1.0");
  ceb_event_set(e, "id", "1");
  ceb_event_set(e, "source", "urn:x");
  ceb_event_set(e, "type", type);
  if (subject) ceb_event_set(e, "subject", subject);
  if (ext) ceb_event_set(e, "partitionkey", ext);
  return e;
}

static ceb_config *sink_of(const char *const *kv) {
  ceb_config *c = cebi_config_new("s");
  for (; kv[0]; kv += 2)
    cebi_config_put(c, kv[0], kv[1], "sink.conf", 7);
  return c;
}

/* Issue 16 B5: a route's default max_inflight (64) never starves a batching
 * sink's batch.max (100): the effective value covers two batches; an
 * explicit value is kept, and flagged when it cannot fill one. */
static void test_batch_fit(void) {
  const char *route_default[] = {"from", "in", "to", "out", NULL};
  const char *route_50[] = {"from",         "in", "to", "out",
                            "max_inflight", "50", NULL};
  const char *route_300[] = {"from",         "in",  "to", "out",
                             "max_inflight", "300", NULL};
  const char *batch[] = {"mode", "batch", "batch.max", "100", NULL};
  const char *binary[] = {"mode", "binary", "batch.max", "100", NULL};
  ceb_config *rd = cfg_of(route_default), *r50 = cfg_of(route_50),
             *r300 = cfg_of(route_300), *sb = sink_of(batch),
             *sn = sink_of(binary);
  ceb_route_cfg brd = bound(rd), br50 = bound(r50), br300 = bound(r300);
  ceb_route_batch f = ceb_route_batch_fit(&brd, 64, sb);
  CHECK_INT(f.batch_max, 100);
  CHECK_INT(f.max_inflight, 200);
  CHECK_INT(f.explicit_inflight, 0);
  CHECK_INT(f.cannot_fill, 0);
  f = ceb_route_batch_fit(&br50, 50, sb);
  CHECK_INT(f.max_inflight, 50);
  CHECK_INT(f.explicit_inflight, 1);
  CHECK_INT(f.cannot_fill, 1);
  f = ceb_route_batch_fit(&br300, 300, sb);
  CHECK_INT(f.max_inflight, 300);
  CHECK_INT(f.cannot_fill, 0);
  f = ceb_route_batch_fit(&brd, 64, sn); /* not batching: unchanged */
  CHECK_INT(f.batch_max, 0);
  CHECK_INT(f.max_inflight, 64);
  f = ceb_route_batch_fit(&br50, 50, NULL);
  CHECK_INT(f.max_inflight, 50);
  CHECK_INT(f.cannot_fill, 0);
  cebi_config_free(rd);
  cebi_config_free(r50);
  cebi_config_free(r300);
  cebi_config_free(sb);
  cebi_config_free(sn);
}

int main(void) {
  test_batch_fit();
  CHECK(ceb_pattern_match("nl.edu.*", "nl.edu.x"));
  CHECK(!ceb_pattern_match("nl.edu.*", "nl.ed"));
  CHECK(ceb_pattern_match("*.created", "a.b.created"));
  CHECK(!ceb_pattern_match("*.created", "a.b.deleted"));
  CHECK(ceb_pattern_match("a|b|c", "b"));
  CHECK(!ceb_pattern_match("a|b|c", "d"));
  CHECK(ceb_pattern_match("x|y.*", "y.z"));
  CHECK(ceb_pattern_match("*", "anything"));
  CHECK(!ceb_pattern_match("abc", "abcd"));

  const char *kv[] = {"from",
                      "in1, in2",
                      "to",
                      "out",
                      "match.type",
                      "nl.edu.*|org.x",
                      "match.partitionkey",
                      "*-7",
                      "order_by",
                      "partitionkey",
                      "dlq",
                      "kafka:edu.dlq",
                      "receipts",
                      "hooks",
                      "retry.schedule",
                      "0s 1s 1m",
                      "deadline",
                      "2h",
                      "max_inflight",
                      "3",
                      NULL};
  ceb_config *c = cfg_of(kv);
  char err[256] = "";
  ceb_route *r = NULL;
  CHECK_INT(parse("r", c, &r, err, sizeof err), 0);
  if (!r) return ceb_test_done("unit_route");
  CHECK_INT(r->nfrom, 2);
  CHECK_STR(r->from[1], "in2");
  CHECK_STR(r->to, "out");
  CHECK_INT(r->nmatch, 2);
  CHECK_STR(r->dlq_sink, "kafka");
  CHECK_STR(r->dlq_topic, "edu.dlq");
  CHECK_STR(r->receipts_sink, "hooks");
  CHECK(r->receipts_topic == NULL);
  CHECK_STR(r->receipts_prefix, "nl.cebridge.delivery");
  CHECK_INT(r->retry.nschedule, 3);
  CHECK_INT(r->retry.schedule[2], 60000);
  CHECK_INT(r->retry.deadline_ms, 7200000);
  CHECK_INT(r->timeout_ms, 15000);
  CHECK_INT(r->max_inflight, 3);

  ceb_event *e1 = ev_of("nl.edu.enrolled", NULL, "s-7");
  ceb_event *e2 = ev_of("org.x", NULL, "s-7");
  ceb_event *e3 = ev_of("nl.edu.enrolled", NULL, "s-8");
  ceb_event *e4 = ev_of("nl.edu.enrolled", NULL, NULL);
  ceb_event *e5 = ev_of("com.other", NULL, "s-7");
  CHECK(ceb_route_matches(r, "in1", e1));
  CHECK(ceb_route_matches(r, "in2", e2));
  CHECK(!ceb_route_matches(r, "in3", e1)); /* not from this source */
  CHECK(!ceb_route_matches(r, "in1", e3)); /* second key fails */
  CHECK(!ceb_route_matches(r, "in1", e4)); /* unset extension */
  CHECK(!ceb_route_matches(r, "in1", e5)); /* first key fails */
  CHECK_STR(ceb_route_order_key(r, e1), "s-7");
  CHECK(ceb_route_order_key(r, e4) == NULL);
  ceb_route_free(r);
  cebi_config_free(c);

  /* Defaults: store DLQ, the profile's schedule, unordered. */
  const char *kv2[] = {"from", "in", "to", "out", NULL};
  c = cfg_of(kv2);
  CHECK_INT(parse("d", c, &r, err, sizeof err), 0);
  CHECK(r && r->dlq_sink == NULL && r->order_by == NULL);
  CHECK(r && r->retry.nschedule == 8 && r->retry.schedule[1] == 5000 &&
        r->retry.schedule[7] == 36000000);
  CHECK(r && ceb_route_matches(r, "in", e5)); /* no filter: everything */
  CHECK(r && ceb_route_order_key(r, e1) == NULL);
  ceb_route_free(r);
  cebi_config_free(c);

  /* Errors name the problem. */
  const char *bad1[] = {"from", "in", "to", "out", "dlq", "kafka", NULL};
  c = cfg_of(bad1);
  CHECK(parse("b", c, &r, err, sizeof err) < 0);
  CHECK(strstr(err, "dlq") != NULL);
  cebi_config_free(c);
  const char *bad2[] = {"from", "in", "to", "out", "match.type", "a||b", NULL};
  c = cfg_of(bad2);
  CHECK(parse("b", c, &r, err, sizeof err) < 0);
  CHECK(strstr(err, "empty alternative") != NULL);
  cebi_config_free(c);
  const char *bad3[] = {"from",           "in",      "to", "out",
                        "retry.schedule", "0s soon", NULL};
  c = cfg_of(bad3);
  CHECK(parse("b", c, &r, err, sizeof err) < 0);
  CHECK(strstr(err, "soon") != NULL);
  cebi_config_free(c);

  ceb_event_unref(e1);
  ceb_event_unref(e2);
  ceb_event_unref(e3);
  ceb_event_unref(e4);
  ceb_event_unref(e5);
  return ceb_test_done("unit_route");
}
