/* The store contract (store_contract.h) on the SQLite engine: each fresh
 * store is a file in a new temp dir, opened through its spec. The specs
 * a plain path and "sqlite:PATH" both choose this engine; the suite runs
 * on the prefixed one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

typedef struct sqlite_ctx {
  char spec[4200];
} sqlite_ctx;

static int fresh(void *arg, const char *tag) {
  sqlite_ctx *c = arg;
  char name[64];
  snprintf(name, sizeof name, "store-contract-%s", tag);
  char *dir = ceb_test_tmpdir(name);
  if (!dir) return CEB_EIO;
  snprintf(c->spec, sizeof c->spec, "sqlite:%s/store.db", dir);
  free(dir);
  return CEB_OK;
}

static ceb_store *open_as(void *arg, const char *instance) {
  sqlite_ctx *c = arg;
  ceb_store_opts o = {.spec = c->spec,
                      .synchronous_full = 1,
                      .group_max = 64,
                      .queue_max = 1024,
                      .instance = instance,
                      .lease_ms = SC_LEASE_MS};
  ceb_store *st = NULL;
  char err[512] = "";
  if (ceb_store_open(&o, &st, err, sizeof err) != CEB_OK) {
    fprintf(stderr, "open %s: %s\n", c->spec, err);
    return NULL;
  }
  return st;
}

int main(void) {
  sqlite_ctx c;
  ceb_store_contract_env env = {
      .engine = "sqlite", .fresh = fresh, .open = open_as, .ctx = &c};
  ceb_store_contract_run(&env);
  /* the spec picks the engine; a plain path is SQLite too */
  CHECK(fresh(&c, "plain") == CEB_OK);
  memmove(c.spec, c.spec + strlen("sqlite:"), strlen(c.spec) - 6);
  ceb_store *st = open_as(&c, "a");
  CHECK(st != NULL);
  if (st) CHECK_STR(ceb_store_engine_name(st), "sqlite");
  if (st) CHECK_STR(ceb_store_instance(st), "a");
  if (st) CHECK_INT(ceb_store_shared(st), 0);
  ceb_store_close(st);
  return ceb_test_done("store_contract_sqlite");
}
