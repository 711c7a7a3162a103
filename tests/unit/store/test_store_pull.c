/* Pull queues in the store: appends numbered 1, 2, ... per queue and made
 * durable before done, a key the queue holds not stored twice, CEB_EBUSY
 * past max (nothing stored), fetch in order after the cursor and after the
 * committed cursor, commit removes up to the cursor and never moves back,
 * a cursor beyond the end refused, sequences never reused after a commit,
 * queues independent, and everything kept across a reopen. */
#include <pthread.h>

#include <ceb/status.h>

#include "ceb_test_latch.h"

#include "store_fixture.h"

/* Appends and waits for done; returns its status (or append's error). */
static int append(ceb_store *st, const char *q, const char *key,
                  const char *json, size_t max) {
  ceb_test_latch l;
  ceb_test_latch_init(&l, NULL, 0);
  return ceb_test_latch_await(
      &l,
      ceb_store_pull_append(st, q, key, json, strlen(json), max,
                            ceb_test_latch_on_status, &l),
      CEB_OK);
}

typedef struct seen {
  char text[512];
  int64_t seqs[16];
  size_t n, stop_after;
} seen;

static int visit(void *arg, int64_t seq, const char *json, size_t len) {
  seen *s = arg;
  if (s->n < 16) s->seqs[s->n] = seq;
  s->n++;
  size_t used = strlen(s->text);
  snprintf(s->text + used, sizeof s->text - used, "%s%.*s", used ? "," : "",
           (int)len, json);
  return s->stop_after && s->n >= s->stop_after;
}

static const char *fetch(ceb_store *st, const char *q, int64_t after,
                         size_t max, int64_t *last, seen *s) {
  memset(s, 0, sizeof *s);
  CHECK_INT(ceb_store_pull_fetch(st, q, after, max, visit, s, last), CEB_OK);
  return s->text;
}

int main(void) {
  char *path = NULL;
  ceb_store *st = fixture_open("store_pull", &path);
  seen s;
  int64_t last = -1, committed = -1, depth = -1;

  /* an unknown queue is empty */
  CHECK_STR(fetch(st, "a", 0, 10, &last, &s), "");
  CHECK_INT(last, 0);
  CHECK_INT(ceb_store_pull_stats(st, "a", &depth, &last, &committed), CEB_OK);
  CHECK_INT(depth, 0);
  CHECK_INT(last, 0);
  CHECK_INT(committed, 0);

  CHECK_INT(append(st, "a", "k1", "1", 3), CEB_OK);
  CHECK_INT(append(st, "a", "k2", "2", 3), CEB_OK);
  CHECK_INT(append(st, "a", "k1", "1-again", 3), CEB_OK); /* held: not twice */
  CHECK_INT(append(st, "b", "k1", "b1", 3), CEB_OK);      /* another queue */
  CHECK_INT(append(st, "a", "k3", "3", 3), CEB_OK);
  CHECK_INT(append(st, "a", "k4", "4", 3), CEB_EBUSY); /* full at 3 */
  CHECK_STR(fetch(st, "a", 0, 10, &last, &s), "1,2,3");
  CHECK_INT(s.seqs[0], 1);
  CHECK_INT(s.seqs[2], 3);
  CHECK_INT(last, 3);
  CHECK_STR(fetch(st, "b", 0, 10, &last, &s), "b1");
  CHECK_INT(last, 1);
  /* max, after, and a visit that stops */
  CHECK_STR(fetch(st, "a", 0, 2, &last, &s), "1,2");
  CHECK_INT(last, 2);
  CHECK_STR(fetch(st, "a", 2, 10, &last, &s), "3");
  CHECK_INT(last, 3);
  CHECK_STR(fetch(st, "a", 3, 10, &last, &s), "");
  CHECK_INT(last, 3);
  memset(&s, 0, sizeof s);
  s.stop_after = 1;
  CHECK_INT(ceb_store_pull_fetch(st, "a", 0, 10, visit, &s, &last), CEB_OK);
  CHECK_STR(s.text, "1");
  CHECK_INT(last, 1);

  /* commit */
  CHECK_INT(ceb_store_pull_commit(st, "a", 4, &committed), CEB_EINVAL);
  CHECK_INT(ceb_store_pull_commit(st, "a", -1, &committed), CEB_EINVAL);
  CHECK_INT(ceb_store_pull_commit(st, "a", 2, &committed), CEB_OK);
  CHECK_INT(committed, 2);
  CHECK_INT(ceb_store_pull_commit(st, "a", 1, &committed), CEB_OK);
  CHECK_INT(committed, 2);                          /* never back */
  CHECK_STR(fetch(st, "a", 0, 10, &last, &s), "3"); /* after the cursor */
  CHECK_INT(ceb_store_pull_stats(st, "a", &depth, &last, &committed), CEB_OK);
  CHECK_INT(depth, 1);
  CHECK_INT(last, 3);
  CHECK_INT(committed, 2);
  /* room again; a key committed away may come back (the old queue did
   * the same); sequences go on */
  CHECK_INT(append(st, "a", "k4", "4", 3), CEB_OK);
  CHECK_INT(append(st, "a", "k1", "1-new", 3), CEB_OK);
  CHECK_STR(fetch(st, "a", 0, 10, &last, &s), "3,4,1-new");
  CHECK_INT(s.seqs[2], 5);
  CHECK_INT(ceb_store_pull_commit(st, "a", 5, &committed), CEB_OK);
  CHECK_STR(fetch(st, "a", 0, 10, &last, &s), "");
  CHECK_INT(last, 5);
  CHECK_INT(append(st, "a", "k6", "6", 3), CEB_OK);
  CHECK_STR(fetch(st, "a", 0, 10, &last, &s), "6");
  CHECK_INT(s.seqs[0], 6);
  /* queue b untouched by a's commits */
  CHECK_STR(fetch(st, "b", 0, 10, &last, &s), "b1");

  /* kept across a reopen */
  ceb_store_close(st);
  ceb_store_opts o = {.spec = path, .synchronous_full = 1, .group_max = 64};
  char err[256] = "";
  st = NULL;
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), CEB_OK);
  CHECK_STR(fetch(st, "a", 0, 10, &last, &s), "6");
  CHECK_INT(ceb_store_pull_stats(st, "a", &depth, &last, &committed), CEB_OK);
  CHECK_INT(committed, 5);
  CHECK_INT(last, 6);
  CHECK_STR(fetch(st, "b", 0, 10, &last, &s), "b1");

  /* SQLite serves one bridge: never shared, leads every task */
  CHECK_INT(ceb_store_shared(st), 0);
  CHECK_INT(ceb_store_try_lead(st, "sweeper", 1), 1);
  ceb_store_close(st);
  free(path);
  return ceb_test_done("unit_store_pull");
}
