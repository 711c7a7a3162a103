/* Ack after durable: while the host holds a submit uncommitted, the broker
 * never gets the acknowledgement, so a new client with the same id and the
 * persistent session receives the message again; once committed and
 * acknowledged it does not come back. Backpressure (EBUSY) also leaves the
 * message unacknowledged until the host accepts again. */
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

static const char *kv_for(ceb_mosq *b, const char **kv) {
  kv[0] = "broker";
  kv[1] = b->addr;
  kv[2] = "client_id";
  kv[3] = "durable-1";
  kv[4] = "topics";
  kv[5] = "orders/#";
  kv[6] = "reconnect.min";
  kv[7] = "1s";
  kv[8] = NULL;
  return kv[0];
}

static int start_source(mtest_inst *t, ceb_mosq *b, ceb_fake_submit_mode mode) {
  const char *kv[10];
  kv_for(b, kv);
  return mtest_start_source(t, kv, mode);
}

int main(void) {
  ceb_mosq *b = ceb_mosq_start(NULL);
  CHECK(b != NULL);
  if (!b) return ceb_test_done("test_mqtt_source_durable");
  ceb_mqtt_client *pub = ceb_mqtt_client_new(b->url, "writer", 5);
  CHECK(pub != NULL);

  /* 1. Held: submitted but never committed. */
  mtest_inst t;
  CHECK_INT(start_source(&t, b, CEB_FAKE_COMMIT_HOLD), 0);
  ceb_event *e1 = mtest_event("held-1", "nl.edu.order");
  CHECK_INT(mtest_publish_event(pub, "orders/1", e1, 5, CEB_MODE_BINARY),
            CEB_OK);
  CHECK(ceb_fake_wait_events(t.fake, 1, 10000));
  mtest_check_id(&t, 0, "held-1");
  /* Draining cannot finish: the submit is still in the host's hands. */
  CHECK_INT(mtest_drain(&t, 300), CEB_ETIMEOUT);
  ceb_fake_commit(t.fake, CEB_ESHUTDOWN); /* the host gave up on it */
  mtest_free(&t);

  /* 2. Same client id: the broker redelivers, because it never saw a
   * PUBACK. Now the host commits. */
  CHECK_INT(start_source(&t, b, CEB_FAKE_COMMIT_HOLD), 0);
  CHECK(ceb_fake_wait_events(t.fake, 1, 10000));
  mtest_check_id(&t, 0, "held-1");
  ceb_fake_commit(t.fake, CEB_OK);
  CHECK_INT(ceb_fake_committed_count(t.fake), 1);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);

  /* 3. Committed and acknowledged: it does not come back. A marker sent
   * after reconnecting arrives first and alone (redeliveries precede new
   * messages on a resumed session). */
  CHECK_INT(start_source(&t, b, CEB_FAKE_COMMIT_NOW), 0);
  ceb_event *marker = mtest_event("marker-1", "nl.edu.order");
  CHECK_INT(mtest_publish_event(pub, "orders/2", marker, 5, CEB_MODE_BINARY),
            CEB_OK);
  CHECK(ceb_fake_wait_events(t.fake, 1, 10000));
  mtest_check_id(&t, 0, "marker-1");
  CHECK_INT(ceb_fake_event_count(t.fake), 1);

  /* 4. Backpressure: refused with EBUSY, the message waits in the source
   * (unacknowledged) and is submitted once the host accepts again. */
  pthread_mutex_lock(&t.fake->lock);
  t.fake->mode = CEB_FAKE_REFUSE;
  t.fake->refuse_status = CEB_EBUSY;
  t.fake->accepting = 0;
  pthread_mutex_unlock(&t.fake->lock);
  ceb_event *e2 = mtest_event("busy-1", "nl.edu.order");
  CHECK_INT(mtest_publish_event(pub, "orders/3", e2, 5, CEB_MODE_BINARY),
            CEB_OK);
  CHECK(!ceb_fake_wait_events(t.fake, 2, 300));
  pthread_mutex_lock(&t.fake->lock);
  t.fake->mode = CEB_FAKE_COMMIT_NOW;
  t.fake->accepting = 1;
  pthread_mutex_unlock(&t.fake->lock);
  CHECK(ceb_fake_wait_events(t.fake, 2, 10000));
  mtest_check_id(&t, 1, "busy-1");
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);

  /* 5. And nothing of that comes back either. */
  CHECK_INT(start_source(&t, b, CEB_FAKE_COMMIT_NOW), 0);
  ceb_event *marker2 = mtest_event("marker-2", "nl.edu.order");
  CHECK_INT(mtest_publish_event(pub, "orders/4", marker2, 5, CEB_MODE_BINARY),
            CEB_OK);
  CHECK(ceb_fake_wait_events(t.fake, 1, 10000));
  mtest_check_id(&t, 0, "marker-2");
  CHECK_INT(ceb_fake_event_count(t.fake), 1);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);

  ceb_event_unref(e1);
  ceb_event_unref(e2);
  ceb_event_unref(marker);
  ceb_event_unref(marker2);
  ceb_mqtt_client_free(pub);
  ceb_mosq_free(b);
  return ceb_test_done("test_mqtt_source_durable");
}
