/* Broker restarts while the source runs: with persistence on, the session
 * and the messages queued for it survive, the source reconnects on its own
 * (automatic reconnect) and every message arrives: no loss. Also the sink
 * side: with the broker down a delivery settles RETRY (never ACK), and after
 * the restart deliveries are acknowledged again. */
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

#define N 10

static int publish_batch(ceb_mosq *b, int from, int to) {
  ceb_mqtt_client *pub = ceb_mqtt_client_new(b->url, "writer", 5);
  if (!pub) return -1;
  int rc = 0;
  for (int i = from; i < to && rc == 0; i++) {
    char id[32];
    snprintf(id, sizeof id, "r-%03d", i);
    ceb_event *ev = mtest_event(id, "nl.edu.restart");
    rc = mtest_publish_event(pub, "restart/x", ev, 5, CEB_MODE_BINARY);
    ceb_event_unref(ev);
  }
  ceb_mqtt_client_free(pub);
  return rc;
}

/* Every id r-000 .. r-(n-1) was submitted at least once (redeliveries
 * after a restart may add duplicates, which the host dedupes). */
static int all_ids_quiet(mtest_inst *t, int n, int verbose) {
  int ok = 1;
  for (int i = 0; i < n; i++) {
    char id[32];
    snprintf(id, sizeof id, "r-%03d", i);
    int found = 0;
    for (size_t j = 0; j < ceb_fake_event_count(t->fake) && !found; j++) {
      ceb_event *ev = ceb_fake_event(t->fake, j);
      found = ev && strcmp(ceb_event_get(ev, "id"), id) == 0;
      ceb_event_unref(ev);
    }
    if (!found) {
      if (verbose) fprintf(stderr, "missing %s\n", id);
      ok = 0;
    }
  }
  return ok;
}

typedef struct ids_wait {
  mtest_inst *t;
  int n;
} ids_wait;

static int have_all(void *arg) {
  ids_wait *w = arg;
  return all_ids_quiet(w->t, w->n, 0);
}

static void source_survives_restart(ceb_mosq *b) {
  const char *kv[] = {
      "broker",    b->addr,         "client_id", "restart-src",   "topics",
      "restart/#", "reconnect.min", "1s",        "reconnect.max", "2s",
      NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SOURCE, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_subscribed(&t));
  CHECK_INT(publish_batch(b, 0, N), 0);
  CHECK(ceb_fake_wait_events(t.fake, N, 10000));

  /* Restart: the source loses its connection and reconnects by itself. */
  CHECK_INT(ceb_mosq_stop(b), 0);
  CHECK(mtest_wait_gauge(&t, "mqtt_connected", 0, 10000));
  CHECK_INT(ceb_mosq_restart(b), 0);
  /* Published while the source may still be away: queued in its session. */
  CHECK_INT(publish_batch(b, N, 2 * N), 0);
  /* Restart again with those still queued: persistence keeps them. */
  CHECK_INT(ceb_mosq_stop(b), 0);
  CHECK_INT(ceb_mosq_restart(b), 0);
  CHECK_INT(publish_batch(b, 2 * N, 3 * N), 0);
  CHECK(mtest_wait_connected(&t, 20000));
  ids_wait w = {&t, 3 * N};
  CHECK(ceb_test_wait(have_all, &w, 20000));
  CHECK(all_ids_quiet(&t, 3 * N, 1));
  fprintf(stderr, "%zu submits for %d messages\n", ceb_fake_event_count(t.fake),
          3 * N);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);
}

static void sink_settles_on_ack_only(ceb_mosq *b) {
  const char *kv[] = {
      "broker", b->addr,         "topic", "out/${type}", "reconnect.min",
      "1s",     "reconnect.max", "2s",    NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_connected(&t, 10000));
  ceb_event *ev = mtest_event("s-1", "nl.edu.out");

  /* Broker gone: no ACK, a RETRY the route's policy reschedules. */
  CHECK_INT(ceb_mosq_kill(b), 0);
  CHECK(mtest_wait_gauge(&t, "mqtt_connected", 0, 10000));
  ceb_delivery *d = ceb_fake_delivery_new(t.fake, ev, "r", NULL, 1);
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  CHECK(ceb_fake_wait_settles(t.fake, 1, 10000));
  ceb_fake_settle s;
  CHECK(ceb_fake_settle_get(t.fake, 0, &s));
  CHECK_INT(s.info.outcome, CEB_RETRY);
  CHECK_STR(s.reason, "mqtt.disconnected");
  ceb_fake_delivery_free(d);

  /* Back: the retry is acknowledged by the broker and settles ACK. */
  CHECK_INT(ceb_mosq_restart(b), 0);
  ceb_mqtt_client *sub = ceb_mqtt_client_new(b->url, "reader", 5);
  CHECK(sub && ceb_mqtt_subscribe(sub, "out/#", 1) == 0);
  CHECK(mtest_wait_connected(&t, 20000));
  d = ceb_fake_delivery_new(t.fake, ev, "r", NULL, 2);
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  CHECK(ceb_fake_wait_settles(t.fake, 2, 10000));
  CHECK(ceb_fake_settle_get(t.fake, 1, &s));
  CHECK_INT(s.info.outcome, CEB_ACK);
  CHECK_INT(ceb_mqtt_wait(sub, 1, 10000), 1);
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
  ceb_mqtt_client_free(sub);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);
}

int main(void) {
  ceb_mosq_opts o = {.persistence = 1};
  ceb_mosq *b = ceb_mosq_start(&o);
  CHECK(b != NULL);
  if (!b) return ceb_test_done("test_mqtt_source_restart");
  source_survives_restart(b);
  sink_settles_on_ack_only(b);
  ceb_mosq_free(b);
  return ceb_test_done("test_mqtt_source_restart");
}
