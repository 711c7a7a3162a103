/* DLQ list with filters (a time range too), the rows of one event, show,
 * replay (same event back to its route,
 * remembered on the row, never twice pending), purge with dry run. */
#include <ceb/status.h>

#include "store_fixture.h"

static long long kill_one(ceb_store *st, const char *id, const char *type,
                          const char *reason, long long now) {
  const char *routes[] = {"r", NULL};
  long long seq = fixture_ingest(st, "urn:s", id, type, routes, NULL, now);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r", now, 100, 0, &c, &n), 0);
  CHECK_INT(n, 1);
  int64_t fence = n ? c[0].fence : 0;
  ceb_claims_free(c, n);
  ceb_attempt_result r = {.seq = seq,
                          .route = "r",
                          .fence = fence,
                          .state = CEB_DS_DEAD,
                          .now = now,
                          .reason = "http.400",
                          .sink = "out",
                          .dead_reason = reason,
                          .dead_json = "{\"id\":\"dead\"}"};
  CHECK_INT(ceb_store_settle_wait(st, &r), 0);
  return r.dlq_id;
}

int main(void) {
  ceb_store *st = fixture_open("dlq", NULL);
  long long d1 = kill_one(st, "e1", "nl.edu.a", "rejected", 1000);
  long long d2 = kill_one(st, "e2", "nl.edu.b", "max_attempts", 2000);
  long long d3 = kill_one(st, "e3", "org.other", "rejected", 3000);
  CHECK(d1 > 0 && d2 > d1 && d3 > d2);

  json_t *l = ceb_store_dlq_list(st, NULL);
  CHECK_INT(json_array_size(l), 3);
  CHECK_INT(json_integer_value(json_object_get(json_array_get(l, 0), "id")),
            d3); /* newest first */
  json_decref(l);
  ceb_dlq_filter f = {.type = "nl.edu.*"};
  l = ceb_store_dlq_list(st, &f);
  CHECK_INT(json_array_size(l), 2);
  json_decref(l);
  f = (ceb_dlq_filter){.reason = "rejected", .since = 2500};
  l = ceb_store_dlq_list(st, &f);
  CHECK_INT(json_array_size(l), 1);
  CHECK_STR(
      json_string_value(json_object_get(json_array_get(l, 0), "event_id")),
      "e3");
  json_decref(l);
  f = (ceb_dlq_filter){.route = "other"};
  l = ceb_store_dlq_list(st, &f);
  CHECK_INT(json_array_size(l), 0);
  json_decref(l);
  /* a time range: since inclusive, until exclusive; purge counts alike */
  f = (ceb_dlq_filter){.since = 1500, .until = 3000};
  l = ceb_store_dlq_list(st, &f);
  CHECK_INT(json_array_size(l), 1);
  CHECK_STR(
      json_string_value(json_object_get(json_array_get(l, 0), "event_id")),
      "e2");
  json_decref(l);
  f = (ceb_dlq_filter){.until = 2001};
  size_t in_range = 0;
  CHECK_INT(ceb_store_dlq_purge(st, &f, 1, &in_range), 0);
  CHECK_INT(in_range, 2);
  /* the dead letters of one journal row (the console's timeline) */
  l = ceb_store_dlq_of_seq(st, 2);
  CHECK_INT(json_array_size(l), 1);
  CHECK_INT(json_integer_value(json_object_get(json_array_get(l, 0), "id")),
            d2);
  json_decref(l);
  l = ceb_store_dlq_of_seq(st, 999);
  CHECK(l != NULL && json_array_size(l) == 0);
  json_decref(l);

  json_t *one = ceb_store_dlq_show(st, d2);
  CHECK(one != NULL);
  CHECK_STR(
      json_string_value(json_object_get(json_object_get(one, "event"), "id")),
      "dead");
  CHECK_STR(json_string_value(json_object_get(one, "reason")), "max_attempts");
  json_decref(one);
  CHECK(ceb_store_dlq_show(st, 9999) == NULL);

  /* Replay dry run changes nothing. */
  size_t count = 0;
  f = (ceb_dlq_filter){.type = "nl.edu.*"};
  CHECK_INT(ceb_store_dlq_replay(st, &f, 5000, 1, &count, NULL), 0);
  CHECK_INT(count, 2);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM delivery WHERE state=4"), 3);

  /* Replay by id: the delivery is pending again with attempts reset, the
   * journal row unsettled, the DLQ row remembers. */
  f = (ceb_dlq_filter){.id = d1};
  json_t *which = json_array();
  CHECK_INT(ceb_store_dlq_replay(st, &f, 5000, 0, &count, which), 0);
  CHECK_INT(fixture_ready_mismatch(st), 0); /* right after a replay too */
  CHECK_INT(count, 1);
  CHECK_INT(json_array_size(which), 1);
  json_decref(which);
  CHECK_INT(fixture_int(st, "SELECT state FROM delivery WHERE seq=1"), 0);
  CHECK_INT(fixture_int(st, "SELECT attempts FROM delivery WHERE seq=1"), 0);
  CHECK_INT(fixture_int(st, "SELECT next_at FROM delivery WHERE seq=1"), 5000);
  CHECK_INT(fixture_int(st, "SELECT open_routes FROM journal_settle WHERE"
                            " seq=1"),
            1);
  CHECK_INT(fixture_int(st, "SELECT settled_at IS NULL FROM journal_settle"
                            " WHERE seq=1"),
            1);
  CHECK_INT(fixture_int(st, "SELECT replays FROM dlq WHERE id=1"), 1);
  CHECK_INT(fixture_int(st, "SELECT replayed_at FROM dlq WHERE id=1"), 5000);
  /* Replaying again while it is pending does nothing. */
  CHECK_INT(ceb_store_dlq_replay(st, &f, 6000, 0, &count, NULL), 0);
  CHECK_INT(count, 0);
  /* It is claimable as a fresh first attempt. */
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r", 5000, 10, 0, &c, &n), 0);
  CHECK_INT(n, 1);
  CHECK_INT(c[0].attempt, 1);
  ceb_claims_free(c, n);

  /* Purge with a dry run, then for real. */
  f = (ceb_dlq_filter){.reason = "rejected"};
  CHECK_INT(ceb_store_dlq_purge(st, &f, 1, &count), 0);
  CHECK_INT(count, 2);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM dlq"), 3);
  CHECK_INT(ceb_store_dlq_purge(st, &f, 0, &count), 0);
  CHECK_INT(count, 2);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM dlq"), 1);
  CHECK_INT(ceb_store_dlq_forwarded(st, d2, 7000), 0);
  CHECK_INT(fixture_int(st, "SELECT forwarded_at FROM dlq"), 7000);
  CHECK_INT(ceb_store_dlq_forwarded(st, 424242, 7000), CEB_ENOTFOUND);
  ceb_store_close(st);
  return ceb_test_done("unit_store_dlq");
}
