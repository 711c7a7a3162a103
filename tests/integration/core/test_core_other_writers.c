/* Deliveries another writer puts into the store (another bridge on the same
 * database; here a second handle on the same store file, as `cebridge dlq
 * replay` beside a running bridge is) reach the engine, whose open counts
 * are its own:
 *  - a route whose count went below 0 by settling rows it never counted
 *    recounts and keeps delivering (it stopped claiming for good before);
 *  - a wake-up from the store (what a PostgreSQL notification turns into,
 *    ceb_store_woken) makes an idle route claim at once, with the poll
 *    (store.poll_interval) set to an hour so nothing else can explain it;
 *  - the poll alone picks work up when no wake-up comes;
 *  - a settle whose claim another writer took over after its lease ended
 *    is refused (fencing token), counted and leaves the row alone. */
#include "harness.h"

#include "store/ceb_store.h"

static const char *k_conf = "[source in]\nplugin = testsource\n"
                            "[sink out]\nplugin = testsink\n"
                            "[route main]\nfrom = in\nto = out\n"
                            "max_inflight = 16\n";

/* Journals one event for route "main" through st, as another bridge would:
 * the running engine's store handle never hears of it. */
static void other_ingest(ceb_store *st, const char *id, int64_t now) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:nld:oin:"
           "00000001234567890000:systeem:test\",\"type\":\"nl.edu.t\"}",
           id);
  ceb_ingest_route r = {.route = "main", .first_at = now, .index = 0};
  ceb_ingest_event ie = {.source = "urn:nld:oin:00000001234567890000:systeem:"
                                   "test",
                         .id = id,
                         .type = "nl.edu.t",
                         .json = json,
                         .json_len = strlen(json),
                         .routes = &r,
                         .nroutes = 1};
  ceb_ingest_batch b = {.events = &ie, .count = 1, .now = now};
  CHECK_INT(ceb_store_ingest_wait(st, &b), CEB_OK);
  CHECK_INT(ie.inserted, 1);
}

/* The state of id on route "main" as the other handle reads it (the
 * runtime's handle finds events by id through its own in-memory map, which
 * holds only what it journaled: SQLite serves one bridge). */
typedef struct other_state {
  ceb_store *st;
  const char *id;
} other_state;

static int other_done(void *arg) {
  other_state *o = arg;
  json_t *s = ceb_store_event_status(o->st, o->id, NULL);
  json_t *r =
      json_array_get(json_object_get(json_array_get(s, 0), "routes"), 0);
  const char *v = json_string_value(json_object_get(r, "state"));
  int done = v && strcmp(v, "done") == 0;
  json_decref(s);
  return done;
}

static int wait_other_done(ceb_store *st, const char *id) {
  other_state o = {st, id};
  return ceb_test_wait(other_done, &o, 10000);
}

static int fenced_is(void *arg) {
  void **a = arg;
  harness *h = a[0];
  return ceb_metrics_get(h->metrics, "cebridge_delivery_settles_fenced_total",
                         "route=\"main\"") >= *(double *)a[1];
}

static int wait_fenced(harness *h, double n) {
  void *a[2] = {h, &n};
  return ceb_test_wait(fenced_is, a, 10000);
}

int main(void) {
  harness h;
  if (harness_open(&h, "other_writers", "store.poll_interval = 1h", k_conf) !=
      0)
    return ceb_test_done("integration_core_other_writers");
  testsink *out = harness_sink(&h, "out");
  char path[4200];
  snprintf(path, sizeof path, "%s/store.db", h.dir);
  ceb_store_opts so = {.spec = path,
                       .synchronous_full = 0,
                       .group_max = 64,
                       .queue_max = 64,
                       .check = CEB_STORE_CHECK_OFF};
  ceb_store *other = NULL;
  char err[256] = "";
  CHECK_INT(ceb_store_open(&so, &other, err, sizeof err), CEB_OK);
  if (!other) return ceb_test_done("integration_core_other_writers");

  /* 1. Below zero. Two rows from elsewhere, then one of our own: the
   * engine claims all three (a claim takes what is due, whoever wrote it)
   * and settles three against a count of one. */
  testsink_hold(out, 1);
  other_ingest(other, "o1", harness_now(&h));
  other_ingest(other, "o2", harness_now(&h));
  CHECK_INT(harness_submit(&h, "in", harness_event("e1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_count(out, 3));
  for (int i = 0; i < 3; i++)
    CHECK(testsink_settle_held(out, CEB_ACK, NULL));
  testsink_hold(out, 0);
  CHECK(wait_other_done(other, "o1"));
  CHECK(wait_other_done(other, "o2"));
  CHECK(harness_wait_state(&h, "e1", "main", "done"));
  /* the count is right again (it was -2), and our next event goes out */
  CHECK(harness_wait_queued(&h, "main", 0));
  CHECK_INT(harness_submit(&h, "in", harness_event("e2", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_id(out, "e2", 1));
  CHECK(harness_wait_state(&h, "e2", "main", "done"));

  /* 2. A wake-up. The route is idle (count 0); a row from elsewhere waits
   * until the store passes the engine a wake-up, and goes out then. */
  CHECK(harness_wait_queued(&h, "main", 0));
  other_ingest(other, "o3", harness_now(&h));
  CHECK_INT(testsink_count_id(out, "o3"), 0);
  ceb_store_woken(ceb_runtime_store(h.rt), "no-such-route");
  ceb_store_woken(ceb_runtime_store(h.rt), "main");
  CHECK(harness_wait_id(out, "o3", 1));
  CHECK(wait_other_done(other, "o3"));
  CHECK(harness_wait_queued(&h, "main", 0));

  /* 3. A wake-up for any route (NULL), as a notification without a route
   * name is. */
  other_ingest(other, "o4", harness_now(&h));
  ceb_store_woken(ceb_runtime_store(h.rt), NULL);
  CHECK(harness_wait_id(out, "o4", 1));
  CHECK(wait_other_done(other, "o4"));

  /* 5. A late settle. The sink holds f1; another writer claims it after
   * its lease ended (a bridge that took the work over); the sink's settle
   * then carries a fencing token that is not the row's any more: refused,
   * logged and counted, and the delivery stays the new holder's. */
  testsink_hold(out, 1);
  CHECK_INT(harness_submit(&h, "in", harness_event("f1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_id(out, "f1", 1));
  ceb_claim *cl = NULL;
  size_t ncl = 0;
  CHECK_INT(ceb_store_claim(other, "main", harness_now(&h) + 24 * 3600000LL, 4,
                            60000, &cl, &ncl),
            CEB_OK);
  CHECK_INT(ncl, 1);
  CHECK(ceb_metrics_get(h.metrics, "cebridge_delivery_settles_fenced_total",
                        "route=\"main\"") == 0);
  CHECK(testsink_settle_held(out, CEB_ACK, NULL));
  testsink_hold(out, 0);
  CHECK(wait_fenced(&h, 1));
  char st_buf[32];
  CHECK_STR(harness_state(&h, "f1", "main", st_buf, sizeof st_buf),
            "in-progress");
  ceb_claims_free(cl, ncl);

  ceb_store_close(other);
  harness_close(&h);

  /* 4. No wake-up at all: the poll (100 ms here) finds the row. */
  if (harness_open(&h, "other_writers_poll", "store.poll_interval = 100ms",
                   k_conf) != 0)
    return ceb_test_done("integration_core_other_writers");
  out = harness_sink(&h, "out");
  snprintf(path, sizeof path, "%s/store.db", h.dir);
  so.spec = path;
  other = NULL;
  CHECK_INT(ceb_store_open(&so, &other, err, sizeof err), CEB_OK);
  if (other) {
    other_ingest(other, "p1", harness_now(&h));
    CHECK(harness_wait_id(out, "p1", 1));
    CHECK(wait_other_done(other, "p1"));
    ceb_store_close(other);
  }
  harness_close(&h);
  return ceb_test_done("integration_core_other_writers");
}
