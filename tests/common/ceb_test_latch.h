/* A one-shot latch for "start an asynchronous call, wait for its done
 * callback": the callback (any thread) opens it with a status and,
 * optionally, a copy of a result; the test thread waits for it.
 *
 * Header-only (static inline) so that test plugins (.so) and benches use it
 * without linking ceb_testlib.
 *
 * Ownership: the latch lives on the waiter's stack; the callback borrows it
 * until it opened it. ceb_test_latch_await must therefore not return before
 * the callback ran: it waits up to CEB_TEST_LATCH_MS and then aborts the
 * test with a line (returning would leave the callback a dangling pointer). */
#ifndef CEB_TEST_LATCH_H
#define CEB_TEST_LATCH_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Long enough for a loaded CI machine; a hang is reported, not waited out. */
#define CEB_TEST_LATCH_MS 300000

typedef struct ceb_test_latch {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done, status;
  void *out;      /* where ceb_test_latch_open copies the result (or NULL) */
  size_t out_len; /* its size */
} ceb_test_latch;

/* out (out_len bytes, may be NULL) gets a copy of the result the callback
 * hands to ceb_test_latch_open. */
static inline void ceb_test_latch_init(ceb_test_latch *l, void *out,
                                       size_t out_len) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&l->cond, &ca);
  pthread_condattr_destroy(&ca);
  l->out = out;
  l->out_len = out_len;
}

/* Any thread, once: records status and copies min(len, out_len) bytes of
 * result into the waiter's out. */
static inline void ceb_test_latch_open(ceb_test_latch *l, int status,
                                       const void *result, size_t len) {
  pthread_mutex_lock(&l->lock);
  if (l->out && result)
    memcpy(l->out, result, len < l->out_len ? len : l->out_len);
  l->status = status;
  l->done = 1;
  pthread_cond_broadcast(&l->cond);
  pthread_mutex_unlock(&l->lock);
}

/* A done callback of the shape void (*)(void *arg, int status) (the
 * store's), arg being the latch. */
static inline void ceb_test_latch_on_status(void *arg, int status) {
  ceb_test_latch_open(arg, status, NULL, 0);
}

/* Takes the start call's return code: when it is not rc_ok the callback
 * will not run, and that code is returned at once; otherwise waits for the
 * callback and returns the status it gave. Destroys the latch either way. */
static inline int ceb_test_latch_await(ceb_test_latch *l, int start_rc,
                                       int rc_ok) {
  int rc = start_rc;
  if (start_rc == rc_ok) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += CEB_TEST_LATCH_MS / 1000;
    pthread_mutex_lock(&l->lock);
    while (!l->done)
      if (pthread_cond_timedwait(&l->cond, &l->lock, &until) != 0 && !l->done) {
        fprintf(stderr, "ceb_test_latch: no done callback in %d ms\n",
                CEB_TEST_LATCH_MS);
        abort();
      }
    rc = l->status;
    pthread_mutex_unlock(&l->lock);
  }
  pthread_cond_destroy(&l->cond);
  pthread_mutex_destroy(&l->lock);
  return rc;
}

#endif
