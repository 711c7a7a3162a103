/* The dedupe map on its own: a multimap checked against a plain model
 * through random adds and removes in a tiny key space (long probe runs,
 * wrap-around, shared keys), then growth and shrinking. */
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "ceb_test.h"
#include "store/sqlite/store_idmap.h"

#define MODEL 4096

typedef struct pair {
  int64_t idh, seq;
} pair;

static pair g_model[MODEL];
static size_t g_nmodel;

static size_t model_find(int64_t idh, int64_t *out) {
  size_t n = 0;
  for (size_t i = 0; i < g_nmodel; i++)
    if (g_model[i].idh == idh) out[n++] = g_model[i].seq;
  return n;
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The map answers exactly the model's multiset of seqs for every key. */
static int same_as_model(cebs_idmap *m, int keys) {
  static int64_t want[MODEL], got[MODEL];
  for (int k = 0; k < keys; k++) {
    size_t nw = model_find(k * 0x10000, want);
    size_t ng = cebs_idmap_find(m, k * 0x10000, got, MODEL);
    if (nw != ng) return 0;
    qsort(want, nw, sizeof *want, cmp);
    qsort(got, ng, sizeof *got, cmp);
    if (memcmp(want, got, nw * sizeof *want) != 0) return 0;
  }
  return cebs_idmap_count(m) == g_nmodel;
}

int main(void) {
  cebs_idmap m;
  cebs_idmap_init(&m);
  int64_t out[4];
  CHECK_INT((int)cebs_idmap_find(&m, 1, out, 4), 0); /* empty, no table */
  cebs_idmap_remove(&m, 1, 1);                       /* no-op */
  CHECK_INT(cebs_idmap_add(&m, 1, 0), CEB_EINVAL);   /* seq 0 is "empty" */

  /* Shared keys and identical pairs: removing one copy leaves the other. */
  CHECK_INT(cebs_idmap_add(&m, 7, 10), CEB_OK);
  CHECK_INT(cebs_idmap_add(&m, 7, 11), CEB_OK);
  CHECK_INT(cebs_idmap_add(&m, 7, 11), CEB_OK);
  CHECK_INT((int)cebs_idmap_find(&m, 7, out, 1), 3); /* count beyond max */
  cebs_idmap_remove(&m, 7, 11);
  CHECK_INT((int)cebs_idmap_find(&m, 7, out, 4), 2);
  cebs_idmap_remove(&m, 7, 12); /* absent pair: nothing changes */
  CHECK_INT((int)cebs_idmap_count(&m), 2);
  cebs_idmap_remove(&m, 7, 10);
  cebs_idmap_remove(&m, 7, 11);
  CHECK_INT((int)cebs_idmap_count(&m), 0);

  /* Random adds and removes over 37 keys against the model: with ~1,500
   * live entries in a 4,096-slot table the probe runs are long and mixed,
   * which is where a wrong backward shift loses or hides entries. */
  srand(12345);
  int64_t next_seq = 1;
  for (int step = 0; step < 60000; step++) {
    int add = g_nmodel == 0 || (g_nmodel < 1500 && rand() % 100 < 55);
    if (add) {
      pair p = {(rand() % 37) * 0x10000, next_seq++};
      CHECK_INT(cebs_idmap_add(&m, p.idh, p.seq), CEB_OK);
      g_model[g_nmodel++] = p;
    } else {
      size_t i = (size_t)rand() % g_nmodel;
      cebs_idmap_remove(&m, g_model[i].idh, g_model[i].seq);
      g_model[i] = g_model[--g_nmodel];
    }
    if (step % 997 == 0 && !same_as_model(&m, 37)) {
      CHECK_MSG(0, "map differs from the model at step %d", step);
      break;
    }
  }
  CHECK(same_as_model(&m, 37));
  while (g_nmodel) {
    cebs_idmap_remove(&m, g_model[g_nmodel - 1].idh, g_model[g_nmodel - 1].seq);
    g_nmodel--;
  }
  CHECK_INT((int)cebs_idmap_count(&m), 0);

  /* Growth keeps every entry; removing most shrinks the table again. */
  for (int64_t s = 1; s <= 200000; s++)
    CHECK_INT(cebs_idmap_add(&m, s * 0x9e3779b97f4a7c15LL, s), CEB_OK);
  CHECK_INT((int)cebs_idmap_count(&m), 200000);
  size_t big = cebs_idmap_bytes(&m);
  CHECK(big >= 200000 * sizeof(cebs_idmap_slot));
  int lost = 0;
  for (int64_t s = 1; s <= 200000; s++)
    lost += cebs_idmap_find(&m, s * 0x9e3779b97f4a7c15LL, out, 4) != 1;
  CHECK_INT(lost, 0);
  for (int64_t s = 1; s <= 199000; s++)
    cebs_idmap_remove(&m, s * 0x9e3779b97f4a7c15LL, s);
  CHECK_INT((int)cebs_idmap_count(&m), 1000);
  CHECK_MSG(cebs_idmap_bytes(&m) * 16 <= big, "%zu bytes left of %zu",
            cebs_idmap_bytes(&m), big);
  for (int64_t s = 199001; s <= 200000; s++)
    lost += cebs_idmap_find(&m, s * 0x9e3779b97f4a7c15LL, out, 4) != 1;
  CHECK_INT(lost, 0);
  cebs_idmap_destroy(&m);
  return ceb_test_done("unit_store_idmap");
}
