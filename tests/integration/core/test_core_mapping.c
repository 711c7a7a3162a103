/* Mappings through the runtime (host->submit_mapped, route filters):
 * an input document becomes the CloudEvent(s) the source's jq program
 * makes, validated and routed like any submit; a program that throws,
 * outputs a non-object or a non-CloudEvent, outputs nothing or runs too
 * long is refused with CEB_EMAPPING and its reason, and nothing is taken;
 * a route filter takes or skips an event, and one that fails refuses the
 * submit (route.filter) with nothing journaled. */
#include "harness.h"

#include <stdlib.h>

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "map = if .kind == \"boom\" then error(\"bad kind: \" + .kind) else "
    "{specversion: \"1.0\", id: .key, "
    "source: \"urn:nld:oin:00000001234567890000:systeem:test\", "
    "type: (\"nl.edu.\" + .kind), datacontenttype: \"application/json\", "
    "data: .value} end\n"
    "[source batch]\nplugin = testsource\n"
    "map = [.items[] | {specversion: \"1.0\", id: .id, source: \"urn:x:b\", "
    "type: \"nl.edu.batch\"}]\n"
    "[source raw]\nplugin = testsource\nmap = .x\n"
    "[source slow]\nplugin = testsource\nmap = def f: f; f\n"
    "[source plain]\nplugin = testsource\n"
    "[sink out]\nplugin = testsink\n"
    "[route r]\nfrom = in, batch, raw, slow, plain\nto = out\n"
    "filter = if .type == \"nl.edu.err\" then error(\"filter boom\") "
    "else .type != \"nl.edu.skip\" end\n";

static int mapped(harness *h, const char *src, const char *doc,
                  ceb_submit_result *res, char *err, size_t errlen) {
  ceb_violations v;
  size_t failed = 99;
  ceb_submit_opts o = {
      .struct_size = sizeof o, .violations = &v, .failed_index = &failed};
  return testsource_submit_mapped(harness_source(h, src), doc, &o, res, err,
                                  errlen);
}

int main(void) {
  harness h;
  if (harness_open(&h, "mapping",
                   "mapping.timeout = 150ms\nmapping.workers = 2", k_conf) != 0)
    return ceb_test_done("integration_core_mapping");
  testsink *out = harness_sink(&h, "out");
  ceb_submit_result res = {0};
  char err[512];

  /* one document, one event, routed and delivered */
  CHECK_INT(mapped(&h, "in",
                   "{\"key\":\"m-1\",\"kind\":\"created\",\"value\":{\"n\":1}}",
                   &res, err, sizeof err),
            CEB_OK);
  CHECK_INT(res.status, CEB_OK);
  CHECK_INT(res.accepted, 1);
  CHECK(harness_wait_id(out, "m-1", 1));
  /* an array is a batch, journaled as one unit */
  CHECK_INT(mapped(&h, "batch",
                   "{\"items\":[{\"id\":\"b-1\"},{\"id\":\"b-2\"}]}", &res, err,
                   sizeof err),
            CEB_OK);
  CHECK_INT(res.accepted, 2);
  CHECK(harness_wait_id(out, "b-2", 1));

  /* the program throws: its message */
  CHECK_INT(mapped(&h, "in", "{\"key\":\"m-2\",\"kind\":\"boom\"}", &res, err,
                   sizeof err),
            CEB_EMAPPING);
  CHECK_STR(err, "mapping: bad kind: boom");
  /* not an object */
  CHECK_INT(mapped(&h, "raw", "{\"x\":42}", &res, err, sizeof err),
            CEB_EMAPPING);
  CHECK_MSG(strstr(err, "output 1 is not a JSON object") && strstr(err, "42"),
            "%s", err);
  /* an object that is not a CloudEvent in the JSON format */
  CHECK_INT(mapped(&h, "raw", "{\"x\":{\"id\":5}}", &res, err, sizeof err),
            CEB_EMAPPING);
  CHECK_MSG(strstr(err, "output 1 is not a CloudEvent"), "%s", err);
  /* an object the CloudEvents rules refuse: validation, as any submit */
  CHECK_INT(mapped(&h, "raw",
                   "{\"x\":{\"specversion\":\"1.0\",\"id\":\"v-1\","
                   "\"type\":\"t\"}}",
                   &res, err, sizeof err),
            CEB_EVALIDATION);
  CHECK_MSG(strstr(err, "event 1 of the mapping") && strstr(err, "source"),
            "%s", err);
  /* no output at all */
  CHECK_INT(mapped(&h, "batch", "{\"items\":[]}", &res, err, sizeof err),
            CEB_EMAPPING);
  CHECK_MSG(strstr(err, "output no event"), "%s", err);
  /* a document that is not JSON (the plugin's bug): refused the same way */
  CHECK_INT(mapped(&h, "in", "{\"key\":", &res, err, sizeof err), CEB_EMAPPING);
  CHECK_MSG(strstr(err, "input is not JSON"), "%s", err);
  /* a runaway program: stopped at mapping.timeout, and the pool goes on */
  CHECK_INT(mapped(&h, "slow", "{}", &res, err, sizeof err), CEB_EMAPPING);
  CHECK_STR(err, "mapping: mapping timed out after 150 ms");
  CHECK_INT(mapped(&h, "in", "{\"key\":\"m-3\",\"kind\":\"created\"}", &res,
                   err, sizeof err),
            CEB_OK);
  /* a source without map */
  CHECK_INT(mapped(&h, "plain", "{}", &res, err, sizeof err), CEB_EINVAL);
  CHECK_MSG(strstr(err, "has no map"), "%s", err);

  /* route filter: false skips the route (the event is journaled,
   * unrouted), an error refuses the submit and takes nothing */
  CHECK_INT(mapped(&h, "in", "{\"key\":\"s-1\",\"kind\":\"skip\"}", &res, err,
                   sizeof err),
            CEB_OK);
  char buf[32];
  CHECK_STR(harness_state(&h, "s-1", "r", buf, sizeof buf), "");
  ceb_event *ev = harness_event("f-1", "nl.edu.err", NULL);
  ceb_violations v;
  size_t failed = 99;
  ceb_submit_opts o = {
      .struct_size = sizeof o, .violations = &v, .failed_index = &failed};
  ceb_event *batch[2] = {harness_event("f-0", "nl.edu.ok", NULL), ev};
  CHECK_INT(testsource_submit(harness_source(&h, "plain"), batch, 2, &o, &res),
            CEB_EVALIDATION);
  CHECK_INT(failed, 1);
  CHECK_STR(v.items[0].code, "route.filter");
  CHECK_MSG(strstr(v.items[0].message, "route r: filter failed: filter boom"),
            "%s", v.items[0].message);
  ceb_event_unref(batch[0]);
  ceb_event_unref(batch[1]);
  CHECK_STR(harness_state(&h, "f-0", "r", buf, sizeof buf), "");
  CHECK_INT(
      harness_submit(&h, "plain", harness_event("f-2", "nl.edu.ok", NULL)),
      CEB_OK);
  CHECK(harness_wait_id(out, "f-2", 1));

  /* counts: what was accepted reached the sink once, nothing else did */
  CHECK_INT(testsink_count(out), 5); /* m-1 b-1 b-2 m-3 f-2 */
  CHECK_INT(testsink_count_id(out, "m-2"), 0);
  CHECK_INT(testsink_count_id(out, "f-0"), 0);
  CHECK_INT(harness_metric(&h, "cebridge_events_rejected_total{role=\"source\","
                               "plugin=\"testsource\",instance=\"in\",reason="
                               "\"mapping\"}"),
            2);
  /* the pool's own counters: the timeout, and the worker that replaced
   * the killed one (2 at start) */
  CHECK_INT(
      harness_metric(&h, "cebridge_mapping_failures_total{reason=\"timeout\"}"),
      1);
  CHECK(harness_metric(&h, "\ncebridge_mapping_worker_starts_total ") >= 3);
  CHECK(harness_metric(&h, "\ncebridge_mapping_runs_total ") >= 10);
  harness_close(&h);
  return ceb_test_done("integration_core_mapping");
}
