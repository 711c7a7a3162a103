/* Dedupe on (client, source, id) through the in-memory map: duplicates in
 * and across batches, ids shared by sources, a failed op's rows forgotten,
 * the map rebuilt when the store reopens, swept rows forgotten (and their
 * id accepted again), status by id, the upgrades from schemas 6 and 19,
 * and a failing ingest inside a group of ingests. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"
#include "store_fixture.h"

static ceb_ingest_event ev(const char *client, const char *source,
                           const char *id) {
  return (ceb_ingest_event){.client = client,
                            .source = source,
                            .id = id,
                            .type = "t",
                            .json = "{}",
                            .json_len = 2};
}

static int ingest(ceb_store *st, ceb_ingest_event *e, size_t n, int64_t now) {
  ceb_ingest_batch b = {e, n, now};
  return ceb_store_ingest_wait(st, &b);
}

/* 1 inserted, 0 duplicate, < 0 error: one unrouted event at time 7. */
static int one(ceb_store *st, const char *client, const char *source,
               const char *id) {
  ceb_ingest_event e = ev(client, source, id);
  int rc = ingest(st, &e, 1, 7);
  return rc < 0 ? rc : e.inserted;
}

static int status_rows(ceb_store *st, const char *id, const char *source) {
  json_t *a = ceb_store_event_status(st, id, source);
  int n = a ? (int)json_array_size(a) : -1;
  /* oldest first */
  for (size_t i = 1; a && i < json_array_size(a); i++)
    if (json_integer_value(json_object_get(json_array_get(a, i - 1), "seq")) >=
        json_integer_value(json_object_get(json_array_get(a, i), "seq")))
      n = -2;
  json_decref(a);
  return n;
}

/* ---- one group commit in which one ingest fails ---- */

static pthread_mutex_t g_gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cond = PTHREAD_COND_INITIALIZER;
static int g_gate_open, g_gate_entered;
static atomic_int g_done, g_status[3];

/* holds the committer until the ops after it are queued (one group) */
static int gate_run(sqlite3 *db, void *arg) {
  (void)db;
  (void)arg;
  pthread_mutex_lock(&g_gate_lock);
  g_gate_entered = 1;
  pthread_cond_broadcast(&g_gate_cond);
  while (!g_gate_open)
    pthread_cond_wait(&g_gate_cond, &g_gate_lock);
  pthread_mutex_unlock(&g_gate_lock);
  return CEB_OK;
}
static void gate_done(void *arg, int status) {
  (void)arg;
  (void)status;
}
static int gate_entered(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_gate_lock);
  int in = g_gate_entered;
  pthread_mutex_unlock(&g_gate_lock);
  return in;
}
static void op_done(void *arg, int status) {
  atomic_store(&g_status[(intptr_t)arg], status);
  atomic_fetch_add(&g_done, 1);
}
static int three_done(void *arg) {
  (void)arg;
  return atomic_load(&g_done) == 3;
}

/* Ingests A, B, C committed in one group, B failing after its first row
 * (an event without a source): A and C commit, B's row and map entry go,
 * and C, carrying the id of B's first event, is no duplicate of it (the
 * group runs without per-op savepoints until an op fails, then again
 * with them: store_commit.c). */
static void test_group_with_failing_ingest(void) {
  char *path = NULL;
  ceb_store *st = fixture_open("dedupe_group", &path);
  cebs_store *s = cebs_of(st);
  CHECK_INT(cebs_submit(s, gate_run, gate_done, NULL, 0), CEB_OK);
  CHECK(ceb_test_wait(gate_entered, NULL, 10000));
  ceb_ingest_event a = ev("c", "urn:a", "ga");
  ceb_ingest_event b[2] = {ev("c", "urn:a", "gb"), ev("c", NULL, "gx")};
  ceb_ingest_event c = ev("c", "urn:a", "gb");
  ceb_ingest_batch ba = {&a, 1, 7}, bb = {b, 2, 7}, bc = {&c, 1, 7};
  CHECK_INT(cebs_ingest(s, &ba, 0, op_done, (void *)(intptr_t)0), CEB_OK);
  CHECK_INT(cebs_ingest(s, &bb, 0, op_done, (void *)(intptr_t)1), CEB_OK);
  CHECK_INT(cebs_ingest(s, &bc, 0, op_done, (void *)(intptr_t)2), CEB_OK);
  pthread_mutex_lock(&g_gate_lock);
  g_gate_open = 1;
  pthread_cond_broadcast(&g_gate_cond);
  pthread_mutex_unlock(&g_gate_lock);
  CHECK(ceb_test_wait(three_done, NULL, 10000));
  CHECK_INT(atomic_load(&g_status[0]), CEB_OK);
  CHECK_INT(atomic_load(&g_status[1]), CEB_EINVAL);
  CHECK_INT(atomic_load(&g_status[2]), CEB_OK);
  CHECK_INT(a.inserted, 1);
  CHECK_INT(b[0].inserted, 0);
  CHECK_INT(c.inserted, 1);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal"), 2);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal WHERE id = 'gb'"), 1);
  CHECK_INT((int)cebs_idmap_count(&s->ids), 2);
  CHECK_INT(one(st, "c", "urn:a", "gb"), 0);
  CHECK_INT(one(st, "c", "urn:a", "ga"), 0);
  ceb_store_close(st);
  free(path);
}

int main(void) {
  char *path = NULL;
  ceb_store *st = fixture_open("dedupe", &path);
  CHECK(st != NULL);

  CHECK_INT(one(st, "c", "urn:a", "x"), 1);
  CHECK_INT(one(st, "c", "urn:a", "x"), 0);  /* duplicate */
  CHECK_INT(one(st, "c", "urn:b", "x"), 1);  /* same id, other source */
  CHECK_INT(one(st, "d", "urn:a", "x"), 1);  /* same id, other client */
  CHECK_INT(one(st, NULL, "urn:a", "x"), 1); /* no client is "" */
  CHECK_INT(one(st, "", "urn:a", "x"), 0);
  CHECK_INT(one(st, "c", "urn:a", "y"), 1);
  CHECK_INT((int)cebs_idmap_count(&cebs_of(st)->ids), 5);
  CHECK_INT(status_rows(st, "x", NULL), 4);
  CHECK_INT(status_rows(st, "x", "urn:b"), 1);
  CHECK_INT(status_rows(st, "nope", NULL), 0);

  /* Within one batch: the second copy is a duplicate of the first. */
  ceb_ingest_event two[2] = {ev("c", "urn:a", "z"), ev("c", "urn:a", "z")};
  CHECK_INT(ingest(st, two, 2, 7), CEB_OK);
  CHECK_INT(two[0].inserted, 1);
  CHECK_INT(two[1].inserted, 0);

  /* A failing op rolls back its rows and forgets their entries: the map
   * keeps no entry the journal does not have. */
  ceb_ingest_event bad[2] = {ev("c", "urn:a", "w"), ev("c", NULL, "v")};
  CHECK_INT(ingest(st, bad, 2, 7), CEB_EINVAL);
  CHECK_INT(bad[0].inserted, 0);
  CHECK_INT((int)cebs_idmap_count(&cebs_of(st)->ids), 6);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal"), 6);
  CHECK_INT(one(st, "c", "urn:a", "w"), 1);
  CHECK_INT((int)cebs_idmap_count(&cebs_of(st)->ids), 7);

  /* Many sources under one id: more candidates than the lookup's first
   * buffer holds. */
  char src[32];
  for (int i = 0; i < 20; i++) {
    snprintf(src, sizeof src, "urn:many:%d", i);
    CHECK_INT(one(st, "c", src, "shared"), 1);
  }
  for (int i = 0; i < 20; i++) {
    snprintf(src, sizeof src, "urn:many:%d", i);
    CHECK_INT(one(st, "c", src, "shared"), 0);
  }
  CHECK_INT(status_rows(st, "shared", NULL), 20);
  ceb_store_close(st);

  /* Reopen: the map is rebuilt from the journal, duplicates still found. */
  ceb_store_opts o = {.spec = path, .synchronous_full = 1, .group_max = 64};
  char err[256] = "";
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  CHECK_INT((int)cebs_idmap_count(&cebs_of(st)->ids), 27);
  CHECK_INT(one(st, "c", "urn:a", "x"), 0);
  CHECK_INT(one(st, "c", "urn:many:19", "shared"), 0);
  CHECK_INT(status_rows(st, "x", NULL), 4);

  /* Sweep (unrouted rows settle at once, at 7): the rows and their
   * entries go, and the same ids are new events again. */
  CHECK_INT(ceb_store_sweep(st, 7 + 1000, 1000, 1000), 27);
  CHECK_INT((int)cebs_idmap_count(&cebs_of(st)->ids), 0);
  CHECK_INT(status_rows(st, "x", NULL), 0);
  CHECK_INT(one(st, "c", "urn:a", "x"), 1);
  CHECK_INT(one(st, "c", "urn:a", "x"), 0);
  ceb_store_close(st);

  /* Upgrade from schema 6: a database made by migrations 1-6 with the
   * random-keyed index; its rows still dedupe after the upgrade. */
  char sql[512];
  snprintf(sql, sizeof sql,
           "INSERT INTO journal (client, source, id, type, received_at,"
           " event, size, open_routes, settled_at, idh) VALUES"
           " ('c', 'urn:a', 'x', 't', 7, '{}', 2, 0, 7, %lld)",
           (long long)cebs_id_hash("x"));
  st = fixture_open_old(path, ".v6", 6, sql);
  CHECK(st != NULL);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM sqlite_master WHERE name ="
                            " 'journal_idh'"),
            0);
  /* schema 20: the hash moved into the settle row, the index went */
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM sqlite_master WHERE name ="
                            " 'journal_seq_idh'"),
            0);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal_settle s JOIN"
                            " journal j ON j.seq = s.seq WHERE s.idh = j.idh"),
            1);
  CHECK_INT((int)cebs_idmap_count(&cebs_of(st)->ids), 1);
  CHECK_INT(one(st, "c", "urn:a", "x"), 0);
  CHECK_INT(one(st, "c", "urn:b", "x"), 1);
  ceb_store_close(st);

  /* Upgrade from schema 19 (journal_seq_idh, a settle row without the
   * hash): the map is rebuilt from the settle rows the migration filled,
   * and a new event's settle row carries its hash. */
  snprintf(sql, sizeof sql,
           "INSERT INTO journal (seq, client, source, id, type, received_at,"
           " event, size, unrouted, idh) VALUES"
           " (5, 'c', 'urn:a', 'y', 't', 7, '{}', 2, 1, %lld);"
           "INSERT INTO journal_settle (seq, open_routes, settled_at)"
           " VALUES (5, 0, 7);",
           (long long)cebs_id_hash("y"));
  st = fixture_open_old(path, ".v19", 19, sql);
  CHECK(st != NULL);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM sqlite_master WHERE name ="
                            " 'journal_seq_idh'"),
            0);
  CHECK_INT((int)cebs_idmap_count(&cebs_of(st)->ids), 1);
  CHECK_INT(one(st, "c", "urn:a", "y"), 0);
  CHECK_INT(one(st, "c", "urn:a", "z"), 1);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal_settle s JOIN"
                            " journal j ON j.seq = s.seq WHERE s.idh = j.idh"),
            2);
  ceb_store_close(st);
  free(path);
  test_group_with_failing_ingest();
  return ceb_test_done("unit_store_dedupe");
}
