/* Delivery claim benchmark: loads `pending` open deliveries of one route
 * spread over `keys` ordering keys (0: unordered) straight into the store,
 * then times ceb_store_claim in the three situations a delivering engine
 * meets:
 *
 *   fill:    window of 64, plenty claimable (the head of each key);
 *   blocked: every key's head is in flight, nothing is claimable (the
 *            claim must not read the blocked backlog to find that out);
 *   steady:  settle one in-flight delivery, then claim (exactly one row,
 *            the next of that key, becomes claimable): the delivery loop.
 *
 *   bench_core_claim [pending=50000] [keys=1000] [dir=$TMPDIR]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include <ceb/status.h>

#include "store/ceb_store.h"
#include "store/sqlite/store_internal.h" /* check_ready reads its tables */

#define WINDOW 64
#define LOAD_BATCH 5000
#define ROUNDS 200

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void report(const char *name, int64_t *us, size_t n, size_t rows) {
  if (n == 0) return;
  qsort(us, n, sizeof *us, cmp_i64);
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += (double)us[i];
  printf("| %s | %zu | %zu | %.3f | %.3f | %.3f | %.3f |\n", name, n, rows,
         sum / (double)n / 1000.0, (double)us[n / 2] / 1000.0,
         (double)us[(n * 99) / 100] / 1000.0, (double)us[n - 1] / 1000.0);
}

static int load(ceb_store *st, size_t pending, size_t keys) {
  ceb_ingest_event *ev = calloc(LOAD_BATCH, sizeof *ev);
  ceb_ingest_route *rt = calloc(LOAD_BATCH, sizeof *rt);
  char(*ids)[32] = calloc(LOAD_BATCH, sizeof *ids);
  char(*kv)[32] = calloc(LOAD_BATCH, sizeof *kv);
  static const char json[] =
      "{\"specversion\":\"1.0\",\"id\":\"x\",\"source\":\"urn:bench\","
      "\"type\":\"nl.bench.claim\",\"data\":{\"n\":1}}";
  int rc = ev && rt && ids && kv ? CEB_OK : CEB_ENOMEM;
  for (size_t done = 0; rc == CEB_OK && done < pending;) {
    size_t n = pending - done < LOAD_BATCH ? pending - done : LOAD_BATCH;
    for (size_t i = 0; i < n; i++) {
      snprintf(ids[i], sizeof ids[i], "ev-%zu", done + i);
      snprintf(kv[i], sizeof kv[i], "key-%zu", keys ? (done + i) % keys : 0);
      rt[i] = (ceb_ingest_route){
          .route = "r", .order_key = keys ? kv[i] : NULL, .first_at = 0};
      ev[i] = (ceb_ingest_event){.source = "urn:bench",
                                 .id = ids[i],
                                 .type = "nl.bench.claim",
                                 .json = json,
                                 .json_len = sizeof json - 1,
                                 .routes = &rt[i],
                                 .nroutes = 1};
    }
    ceb_ingest_batch b = {.events = ev, .count = n, .now = 1};
    rc = ceb_store_ingest_wait(st, &b);
    done += n;
  }
  free(ev);
  free(rt);
  free(ids);
  free(kv);
  return rc;
}

static int settle(ceb_store *st, int64_t seq, int64_t fence) {
  ceb_attempt_result r = {
      .seq = seq, .route = "r", .fence = fence, .state = CEB_DS_DONE, .now = 2};
  return ceb_store_settle_wait(st, &r);
}

/* The claimable set the claim reads must equal its definition (open:
 * pending, retrying or in progress at its lease end; no older open row of
 * the key) after all the claims and settles above. */
static int check_ready(ceb_store *st) {
  static const char sql[] =
      "SELECT (SELECT COUNT(*) FROM (SELECT route, seq FROM delivery d"
      " WHERE state < 3 AND (order_key IS NULL OR NOT EXISTS (SELECT 1"
      " FROM delivery p WHERE p.route = d.route AND p.order_key ="
      " d.order_key AND p.state < 3 AND p.seq < d.seq))"
      " EXCEPT SELECT route, seq FROM delivery_ready))"
      " + (SELECT COUNT(*) FROM delivery_ready r WHERE NOT EXISTS (SELECT 1"
      " FROM delivery d WHERE d.seq = r.seq AND d.route = r.route"
      " AND d.next_at = r.next_at AND d.state < 3))";
  sqlite3 *db = cebs_read_begin(cebs_of(st));
  sqlite3_stmt *s = NULL;
  long long bad = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    bad = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  cebs_read_end(cebs_of(st), db);
  if (bad != 0) {
    fprintf(stderr, "claimable set differs from its definition: %lld\n", bad);
    return CEB_EIO;
  }
  printf("\nclaimable set matches its definition\n");
  return CEB_OK;
}

int main(int argc, char **argv) {
  size_t pending = argc > 1 ? strtoul(argv[1], NULL, 10) : 50000;
  size_t keys = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
  const char *tmp = argc > 3 ? argv[3] : getenv("TMPDIR");
  if (pending == 0 || (keys && keys * 2 > pending)) {
    fprintf(stderr, "usage: %s [pending>0] [keys<=pending/2] [dir]\n", argv[0]);
    return 2;
  }
  char dir[512];
  snprintf(dir, sizeof dir, "%s/ceb-bench-claim-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  char path[600];
  snprintf(path, sizeof path, "%s/store.db", dir);
  ceb_store_opts o = {
      .spec = path, .group_max = 64, .group_wait_ms = 0, .queue_max = 1024};
  ceb_store *st = NULL;
  char err[256];
  if (ceb_store_open(&o, &st, err, sizeof err) != CEB_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  int64_t t0 = mono_us();
  int rc = load(st, pending, keys);
  printf("loaded %zu pending deliveries, %zu keys, in %.1f s\n", pending, keys,
         (double)(mono_us() - t0) / 1e6);
  printf("\n| claim | calls | rows | mean ms | p50 ms | p99 ms | max ms |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");

  /* keys in flight so far; unordered: at most ROUNDS windows */
  size_t heads = keys ? keys : WINDOW * ROUNDS;
  size_t cap = heads / WINDOW + 2;
  int64_t *us = calloc(cap > ROUNDS ? cap : ROUNDS, sizeof *us);
  int64_t *inflight = calloc(heads + WINDOW, sizeof *inflight);
  int64_t *fences = calloc(heads + WINDOW, sizeof *fences);
  size_t n_in = 0, calls = 0, rows = 0;
  while (rc == CEB_OK && n_in < heads && calls < cap) {
    ceb_claim *c = NULL;
    size_t n = 0;
    int64_t a = mono_us();
    rc = ceb_store_claim(st, "r", 10, WINDOW, 0, &c, &n);
    us[calls++] = mono_us() - a;
    for (size_t i = 0; i < n; i++, n_in++) {
      inflight[n_in] = c[i].seq;
      fences[n_in] = c[i].fence;
    }
    rows += n;
    ceb_claims_free(c, n);
    if (n == 0) break;
  }
  report("fill (window 64)", us, calls, rows);

  if (keys) {
    calls = rows = 0;
    for (int i = 0; rc == CEB_OK && i < 20; i++) {
      ceb_claim *c = NULL;
      size_t n = 0;
      int64_t a = mono_us();
      rc = ceb_store_claim(st, "r", 10, WINDOW, 0, &c, &n);
      us[calls++] = mono_us() - a;
      rows += n;
      ceb_claims_free(c, n);
    }
    report("blocked (all heads in flight)", us, calls, rows);

    int64_t *sus = calloc(ROUNDS, sizeof *sus);
    calls = rows = 0;
    for (size_t i = 0; rc == CEB_OK && sus && i < ROUNDS && i < n_in; i++) {
      int64_t a = mono_us();
      rc = settle(st, inflight[i], fences[i]);
      sus[i] = mono_us() - a;
      ceb_claim *c = NULL;
      size_t n = 0;
      a = mono_us();
      if (rc == CEB_OK) rc = ceb_store_claim(st, "r", 10, WINDOW, 0, &c, &n);
      us[calls++] = mono_us() - a;
      if (n != 1) {
        fprintf(stderr, "steady: claimed %zu rows after a settle, want 1\n", n);
        rc = rc == CEB_OK ? CEB_EIO : rc;
      }
      rows += n;
      ceb_claims_free(c, n);
    }
    report("steady (settle 1, claim)", us, calls, rows);
    report("settle (attempt_run DONE)", sus, calls, calls);
    free(sus);
  }
  if (rc == CEB_OK) rc = check_ready(st);
  free(us);
  free(inflight);
  free(fences);
  ceb_store_close(st);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (rc != CEB_OK) fprintf(stderr, "failed: %d\n", rc);
  return rc == CEB_OK ? 0 : 1;
}
