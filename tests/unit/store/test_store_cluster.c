/* The cluster view's tables on the SQLite engine (the same view as on
 * PostgreSQL, of one bridge): a heartbeat lists the instance with what it
 * said (host, pid, version, start) and refreshes it; try_lead records the
 * tasks it leads; the view counts this instance's claims per route and
 * moves claims whose lease ended to leases_expired; an instance silent for
 * 30 s is stale, one silent for an hour is dropped by the next heartbeat;
 * leave removes the instance and its tasks. */
#include <ceb/status.h>

#include "store_fixture.h"

static json_t *instance_in(json_t *view, const char *id) {
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(view, "instances"), i, o) {
    if (strcmp(json_string_value(json_object_get(o, "id")), id) == 0) return o;
  }
  return NULL;
}

static void ingest(ceb_store *st, const char *id, const char *route,
                   int64_t now) {
  ceb_ingest_route r = {.route = route, .first_at = now};
  ceb_ingest_event ie = {.source = "s",
                         .id = id,
                         .type = "t",
                         .json = "{}",
                         .json_len = 2,
                         .routes = &r,
                         .nroutes = 1};
  ceb_ingest_batch b = {.events = &ie, .count = 1, .now = now};
  CHECK_INT(ceb_store_ingest_wait(st, &b), CEB_OK);
}

int main(void) {
  ceb_store *st = fixture_open("store_cluster", NULL);
  const char *me = ceb_store_instance(st);
  int64_t t0 = 1700000000000LL;

  json_t *v = ceb_store_cluster(st, t0);
  CHECK(v != NULL);
  CHECK_STR(json_string_value(json_object_get(v, "instance")), me);
  CHECK_INT(json_array_size(json_object_get(v, "instances")), 0);
  json_decref(v);

  ceb_store_member m = {
      .hostname = "node-a", .pid = 4121, .version = "9.9.9", .started_at = t0};
  CHECK_INT(ceb_store_heartbeat(st, &m, t0), CEB_OK);
  CHECK_INT(ceb_store_try_lead(st, "sweeper", t0), 1);
  CHECK_INT(ceb_store_try_lead(st, "dlq-forward", t0), 1);
  CHECK_INT(ceb_store_try_lead(st, "sweeper", t0 + 1), 1); /* again: same */
  /* claims held by this instance: one on r1 whose lease (60 s, the
   * default) ended, one on r2 still running */
  ingest(st, "e1", "r1", t0);
  ingest(st, "e2", "r2", t0);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r1", t0, 1, 1000, &c, &n), CEB_OK);
  CHECK_INT(n, 1);
  ceb_claims_free(c, n);
  CHECK_INT(ceb_store_claim(st, "r2", t0 + 90000, 1, 1000, &c, &n), CEB_OK);
  CHECK_INT(n, 1);
  ceb_claims_free(c, n);
  int64_t later = t0 + 100000;
  CHECK_INT(ceb_store_heartbeat(st, &m, later), CEB_OK);
  v = ceb_store_cluster(st, later);
  json_t *in = instance_in(v, me);
  CHECK(in != NULL);
  CHECK_STR(json_string_value(json_object_get(in, "hostname")), "node-a");
  CHECK_INT(json_integer_value(json_object_get(in, "pid")), 4121);
  CHECK_STR(json_string_value(json_object_get(in, "version")), "9.9.9");
  CHECK_INT(json_integer_value(json_object_get(in, "started_at")), t0);
  CHECK_INT(json_integer_value(json_object_get(in, "heartbeat_at")), later);
  CHECK(json_is_false(json_object_get(in, "stale")));
  json_t *leads = json_object_get(in, "leads");
  CHECK_INT(json_array_size(leads), 2);
  CHECK_STR(json_string_value(json_array_get(leads, 0)), "dlq-forward");
  CHECK_STR(json_string_value(json_array_get(leads, 1)), "sweeper");
  CHECK_INT(
      json_integer_value(json_object_get(json_object_get(in, "leases"), "r2")),
      1);
  CHECK(json_object_get(json_object_get(in, "leases"), "r1") == NULL);
  CHECK_INT(json_integer_value(
                json_object_get(json_object_get(v, "leases_expired"), "r1")),
            1);
  json_decref(v);

  /* stale after 30 s without a heartbeat */
  v = ceb_store_cluster(st, later + CEB_STORE_STALE_MS + 1);
  CHECK(json_is_true(json_object_get(instance_in(v, me), "stale")));
  json_decref(v);

  /* leave: gone, with its tasks; its claims stay (their leases run out) */
  CHECK_INT(ceb_store_leave(st), CEB_OK);
  v = ceb_store_cluster(st, later);
  in = instance_in(v, me); /* listed only as the holder of a live claim */
  CHECK(in != NULL);
  CHECK(json_is_true(json_object_get(in, "stale")));
  CHECK_INT(json_array_size(json_object_get(in, "leads")), 0);
  CHECK(json_object_get(in, "hostname") == NULL);
  json_decref(v);
  ceb_store_close(st);
  return ceb_test_done("unit_store_cluster");
}
