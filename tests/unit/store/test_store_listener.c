/* The store tells the engine of new deliveries itself: the ingest listener
 * runs on the committer right after an ingest batch (ceb_store_ingest)
 * committed, with `inserted` set per event, before the batch's done; a
 * duplicate batch reaches it with nothing inserted; ops queued with
 * the SQLite engine's cebs_submit / cebs_call never reach it; a cleared
 * listener hears nothing. */
#include <ceb/status.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "store_fixture.h"

typedef struct job {
  ceb_ingest_batch batch; /* first: done gets &batch */
  ceb_ingest_event ev[2];
  ceb_ingest_route rt[2];
  atomic_int done, status;
  atomic_int heard_before_done; /* listener ran before done */
} job;

static atomic_int g_calls, g_inserted, g_routes;
static pthread_t g_committer;
static int g_marker;

static void listener(void *arg, const ceb_ingest_batch *b) {
  CHECK(arg == &g_marker);
  job *j = (job *)b; /* the batch is the job's first member */
  atomic_fetch_add(&g_calls, 1);
  g_committer = pthread_self();
  for (size_t i = 0; i < b->count; i++) {
    atomic_fetch_add(&g_inserted, b->events[i].inserted);
    for (size_t r = 0; r < b->events[i].nroutes; r++)
      atomic_fetch_add(&g_routes, (int)b->events[i].routes[r].index);
  }
  if (!atomic_load(&j->done)) atomic_store(&j->heard_before_done, 1);
}

static void on_done(void *arg, int status) {
  job *j = arg;
  atomic_store(&j->status, status);
  atomic_store(&j->done, 1);
}

static void fill(job *j, const char *id1, const char *id2) {
  memset(j, 0, sizeof *j);
  j->rt[0] = (ceb_ingest_route){.route = "a", .index = 3};
  j->rt[1] = (ceb_ingest_route){.route = "b", .index = 4};
  j->ev[0] = (ceb_ingest_event){.source = "s",
                                .id = id1,
                                .type = "t",
                                .json = "{}",
                                .json_len = 2,
                                .routes = j->rt,
                                .nroutes = 2};
  j->ev[1] = (ceb_ingest_event){.source = "s",
                                .id = id2,
                                .type = "t",
                                .json = "{}",
                                .json_len = 2,
                                .routes = &j->rt[1],
                                .nroutes = 1};
  j->batch = (ceb_ingest_batch){j->ev, 2, 1000};
}

static int is_done(void *arg) {
  return atomic_load(&((job *)arg)->done);
}

static int noop_run(struct sqlite3 *db, void *arg) {
  (void)db;
  (void)arg;
  return CEB_OK;
}

int main(void) {
  ceb_store *st = fixture_open("listener", NULL);
  ceb_store_set_ingest_listener(st, listener, &g_marker);

  job j;
  fill(&j, "e1", "e2");
  CHECK_INT(ceb_store_ingest(st, &j.batch, on_done), CEB_OK);
  CHECK(ceb_test_wait(is_done, &j, 10000));
  CHECK_INT(atomic_load(&j.status), CEB_OK);
  CHECK_INT(atomic_load(&g_calls), 1);
  CHECK_INT(atomic_load(&g_inserted), 2);
  CHECK_INT(atomic_load(&g_routes), 3 + 4 + 4); /* the indexes it carried */
  CHECK(atomic_load(&j.heard_before_done));
  CHECK(!pthread_equal(g_committer, pthread_self()));

  /* the same events again: heard, nothing inserted */
  job d;
  fill(&d, "e1", "e2");
  CHECK_INT(ceb_store_ingest(st, &d.batch, on_done), CEB_OK);
  CHECK(ceb_test_wait(is_done, &d, 10000));
  CHECK_INT(atomic_load(&g_calls), 2);
  CHECK_INT(atomic_load(&g_inserted), 2);

  /* other ops (and ingest runs not queued as ingest) are not heard */
  CHECK_INT(cebs_call(cebs_of(st), noop_run, NULL), CEB_OK);
  job other;
  fill(&other, "e3", "e4");
  CHECK_INT(cebs_call(cebs_of(st), cebs_ingest_run, &other.batch), CEB_OK);
  CHECK_INT(atomic_load(&g_calls), 2);

  /* cleared: new batches are journaled, nobody is told */
  ceb_store_set_ingest_listener(st, NULL, NULL);
  job late;
  fill(&late, "e5", "e6");
  CHECK_INT(ceb_store_ingest(st, &late.batch, on_done), CEB_OK);
  CHECK(ceb_test_wait(is_done, &late, 10000));
  CHECK_INT(atomic_load(&late.status), CEB_OK);
  CHECK_INT(atomic_load(&g_calls), 2);
  CHECK_INT(fixture_int(st, "SELECT count(*) FROM journal"), 6);

  ceb_store_close(st);
  return ceb_test_done("unit_store_listener");
}
