/* Egress mappings and dry runs through the runtime and the engine: the
 * route's map (which wins over its sink's) or the sink's reaches the sink
 * as ceb_delivery.mapped (body, content type, headers, key, topic) with
 * the Idempotency-Key of the event, unchanged by the body; a mapping that
 * throws or outputs the wrong shape dead-letters the delivery (reason
 * mapping) without calling the sink; a dry-run route calls no sink and
 * settles done with reason dry-run and what it would have sent. */
#include "harness.h"

#include <stdlib.h>

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "[sink partner]\nplugin = testsink\n"
    "map = {body: {type: .type, data: .data}}\n"
    "[sink bus]\nplugin = testsink\n"
    "[route via_sink]\nfrom = in\nto = partner\nmatch.type = nl.edu.a\n"
    "[route own]\nfrom = in\nto = bus\nmatch.type = nl.edu.a\n"
    "map = {body: .id, content_type: \"text/x-id\", headers: {\"X-Type\": "
    ".type}, key: .subject, topic: (\"t/\" + .type)}\n"
    "[route bad]\nfrom = in\nto = bus\nmatch.type = nl.edu.bad\n"
    "map = if .id == \"x-1\" then error(\"no way\") else {nobody: 1} end\n"
    "[route dry]\nfrom = in\nto = partner\nmatch.type = nl.edu.dry\n"
    "dry_run = true\n";

static const char *route_str(harness *h, const char *id, const char *route,
                             const char *field, char *buf, size_t n) {
  buf[0] = '\0';
  json_t *st = ceb_runtime_event_status(h->rt, id, NULL);
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(json_array_get(st, 0), "routes"), i, r) {
    const char *v = json_string_value(json_object_get(r, field));
    if (strcmp(json_string_value(json_object_get(r, "route")), route) == 0 && v)
      snprintf(buf, n, "%s", v);
  }
  json_decref(st);
  return buf;
}

static int find_route(testsink *s, const char *route, testsink_seen *out) {
  for (size_t i = 0; i < testsink_count(s); i++)
    if (testsink_get(s, i, out) && strcmp(out->route, route) == 0) return 1;
  return 0;
}

int main(void) {
  harness h;
  if (harness_open(&h, "egress", NULL, k_conf) != 0)
    return ceb_test_done("integration_core_egress");
  testsink *partner = harness_sink(&h, "partner");
  testsink *bus = harness_sink(&h, "bus");
  ceb_event *ev = harness_event("a-1", "nl.edu.a", NULL);
  ceb_event_set(ev, "subject", "student-7");
  CHECK_INT(harness_submit(&h, "in", ev), CEB_OK);
  CHECK(harness_wait_state(&h, "a-1", "via_sink", "done"));
  CHECK(harness_wait_state(&h, "a-1", "own", "done"));

  testsink_seen s;
  CHECK(find_route(partner, "via_sink", &s));
  CHECK_INT(s.mapped, 1);
  CHECK_STR(s.body, "{\"type\":\"nl.edu.a\",\"data\":{\"n\":1}}");
  CHECK_STR(s.content_type, "application/json");
  CHECK_STR(s.headers, "");
  CHECK_STR(s.key, "");
  CHECK_STR(s.map_topic, "");
  char via_key[80];
  snprintf(via_key, sizeof via_key, "%s", s.idem_key);
  CHECK(find_route(bus, "own", &s));
  CHECK_INT(s.mapped, 1);
  CHECK_STR(s.body, "a-1"); /* a string body: its bytes */
  CHECK_STR(s.content_type, "text/x-id");
  CHECK_STR(s.headers, "X-Type: nl.edu.a\n");
  CHECK_STR(s.key, "student-7");
  CHECK_STR(s.map_topic, "t/nl.edu.a");
  /* the Idempotency-Key is the event's and route's, not the body's: two
   * routes, two keys, each a UUID */
  CHECK_INT(strlen(s.idem_key), 36);
  CHECK(strcmp(s.idem_key, via_key) != 0);

  /* a mapping that throws, and one with the wrong shape: dead-lettered,
   * the sink never called */
  size_t before = testsink_count(bus);
  CHECK_INT(harness_submit(&h, "in", harness_event("x-1", "nl.edu.bad", NULL)),
            CEB_OK);
  CHECK_INT(harness_submit(&h, "in", harness_event("x-2", "nl.edu.bad", NULL)),
            CEB_OK);
  CHECK(harness_wait_state(&h, "x-1", "bad", "dead"));
  CHECK(harness_wait_state(&h, "x-2", "bad", "dead"));
  char buf[600];
  CHECK_STR(route_str(&h, "x-1", "bad", "last_reason", buf, sizeof buf),
            "mapping");
  CHECK_STR(route_str(&h, "x-1", "bad", "last_error", buf, sizeof buf),
            "no way");
  route_str(&h, "x-2", "bad", "last_error", buf, sizeof buf);
  CHECK_MSG(strstr(buf, "must be an object with a body member"), "%s", buf);
  CHECK_INT(testsink_count(bus), before);

  /* dry run: no sink call, done with reason dry-run and what would go */
  size_t pbefore = testsink_count(partner);
  CHECK_INT(harness_submit(&h, "in", harness_event("d-1", "nl.edu.dry", NULL)),
            CEB_OK);
  CHECK(harness_wait_state(&h, "d-1", "dry", "done"));
  CHECK_STR(route_str(&h, "d-1", "dry", "last_reason", buf, sizeof buf),
            "dry-run");
  route_str(&h, "d-1", "dry", "last_error", buf, sizeof buf);
  CHECK_MSG(strstr(buf, "would send to sink partner: ") &&
                strstr(buf, "application/json") && strstr(buf, "nl.edu.dry"),
            "%s", buf);
  CHECK_INT(testsink_count(partner), pbefore);
  harness_close(&h);
  return ceb_test_done("integration_core_egress");
}
