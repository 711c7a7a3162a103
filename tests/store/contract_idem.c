/* The contract of idempotency records: reserve, in flight, mismatch,
 * replay, expiry, abort, reset, and one winner among concurrent begins. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/plugin.h>
#include <ceb/status.h>

#include "contract_internal.h"

static int begin(ceb_store *st, const char *client, const char *key,
                 const char *fp, int64_t now, ceb_idem_result *r) {
  memset(r, 0, sizeof *r);
  int rc = ceb_store_idem_begin(st, client, key, fp, now, r);
  CHECK_INT(rc, CEB_OK);
  return rc == CEB_OK ? r->state : -1;
}

static int begin_state(ceb_store *st, const char *client, const char *key,
                       const char *fp, int64_t now) {
  ceb_idem_result r;
  int state = begin(st, client, key, fp, now, &r);
  free(r.content_type);
  free(r.body);
  return state;
}

void sc_idem(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "idem");
  if (!st) return;
  CHECK_INT(begin_state(st, "c", "k", "fp1", 1000), CEB_IDEM_NEW);
  CHECK_INT(begin_state(st, "c", "k", "fp1", 1001), CEB_IDEM_IN_FLIGHT);
  CHECK_INT(begin_state(st, "c", "k", "fp2", 1001), CEB_IDEM_MISMATCH);
  CHECK_INT(begin_state(st, "d", "k", "fp1", 1001), CEB_IDEM_NEW); /* per
                                                                      client */
  static const char body[] = "{\"a\":1}\0tail";
  CHECK_INT(ceb_store_idem_finish(st, "c", "k", 202, "application/json", body,
                                  sizeof body - 1, 1100, 10000),
            CEB_OK);
  ceb_idem_result r;
  CHECK_INT(begin(st, "c", "k", "fp1", 2000, &r), CEB_IDEM_REPLAY);
  CHECK_INT(r.http_status, 202);
  CHECK_STR(r.content_type, "application/json");
  CHECK_INT(r.body_len, sizeof body - 1);
  CHECK(r.body && memcmp(r.body, body, sizeof body - 1) == 0);
  free(r.content_type);
  free(r.body);
  CHECK_INT(begin_state(st, "c", "k", "fp2", 2000), CEB_IDEM_MISMATCH);
  /* abort leaves a finished record alone */
  CHECK_INT(ceb_store_idem_abort(st, "c", "k"), CEB_OK);
  CHECK_INT(begin_state(st, "c", "k", "fp1", 2000), CEB_IDEM_REPLAY);
  /* expired at 1100 + 10000: absent again */
  CHECK_INT(begin_state(st, "c", "k", "fp1", 11099), CEB_IDEM_REPLAY);
  CHECK_INT(begin_state(st, "c", "k", "fp2", 11100), CEB_IDEM_NEW);
  /* finish needs a reservation */
  CHECK_INT(
      ceb_store_idem_finish(st, "x", "none", 202, NULL, "", 0, 3000, 1000),
      CEB_ENOTFOUND);
  /* abort drops a reservation */
  CHECK_INT(begin_state(st, "c", "k2", "fp", 3000), CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_abort(st, "c", "k2"), CEB_OK);
  CHECK_INT(begin_state(st, "c", "k2", "fp", 3001), CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_abort(st, "c", "k2"), CEB_OK);
  /* reset at start drops what an earlier run left in flight */
  CHECK_INT(begin_state(st, "c", "k3", "fp", 3000), CEB_IDEM_NEW);
  ceb_store_close(st);
  st = env->open(env->ctx, "a");
  CHECK(st != NULL);
  if (!st) return;
  CHECK_INT(ceb_store_idem_reset_inflight(st), CEB_OK);
  CHECK_INT(begin_state(st, "c", "k3", "fp", 4000), CEB_IDEM_NEW);
  ceb_store_close(st);
}

/* ---- concurrent begins ---- */

#define RACERS 8

typedef struct racer {
  ceb_store *st;
  pthread_barrier_t *go;
  int rc, state;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  ceb_idem_result res;
  memset(&res, 0, sizeof res);
  pthread_barrier_wait(r->go);
  r->rc = ceb_store_idem_begin(r->st, "c", "race", "fp", 5000, &res);
  r->state = res.state;
  free(res.content_type);
  free(res.body);
  return NULL;
}

/* Of begins of one key at once, exactly one reserves it; the others see
 * it in flight. Threads of one bridge on every engine; two bridges too
 * on a shared store. */
void sc_idem_race(const ceb_store_contract_env *env) {
  ceb_store *a = sc_fresh(env, "idem-race");
  if (!a) return;
  ceb_store *b = ceb_store_shared(a) ? env->open(env->ctx, "b") : NULL;
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, RACERS);
  racer rs[RACERS];
  pthread_t t[RACERS];
  for (int i = 0; i < RACERS; i++) {
    rs[i] = (racer){.st = b && i % 2 ? b : a, .go = &go, .rc = -1};
    pthread_create(&t[i], NULL, race, &rs[i]);
  }
  int fresh = 0, inflight = 0;
  for (int i = 0; i < RACERS; i++) {
    pthread_join(t[i], NULL);
    CHECK_INT(rs[i].rc, CEB_OK);
    fresh += rs[i].state == CEB_IDEM_NEW;
    inflight += rs[i].state == CEB_IDEM_IN_FLIGHT;
  }
  pthread_barrier_destroy(&go);
  CHECK_INT(fresh, 1);
  CHECK_INT(inflight, RACERS - 1);
  if (b) ceb_store_close(b);
  ceb_store_close(a);
}
