/* The store contract (store_contract.h) on the PostgreSQL engine: one
 * PostgreSQL the runner starts (tests/common/ceb_test_pg.h), a new database
 * for each fresh store, opened through its conninfo. Skipped (77) only
 * when no PostgreSQL server binaries exist at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "ceb_test_pg.h"
#include "contract_internal.h"

typedef struct pg_ctx {
  ceb_test_pg pg;
  int n;
  char conninfo[1024];
} pg_ctx;

static int fresh(void *arg, const char *tag) {
  pg_ctx *c = arg;
  char name[64];
  int len = snprintf(name, sizeof name, "sc%d_", ++c->n);
  for (const char *p = tag; *p && len < (int)sizeof name - 1; p++)
    name[len++] = (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a')
                  : ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
                      ? *p
                      : '_';
  name[len] = '\0';
  return ceb_test_pg_createdb(&c->pg, name, c->conninfo, sizeof c->conninfo) ==
                 0
             ? CEB_OK
             : CEB_EIO;
}

static ceb_store *open_as(void *arg, const char *instance) {
  pg_ctx *c = arg;
  ceb_store_opts o = {.spec = c->conninfo,
                      .synchronous_full = 1,
                      .group_max = 64,
                      .queue_max = 1024,
                      .instance = instance,
                      .lease_ms = SC_LEASE_MS,
                      .pool_size = 4};
  ceb_store *st = NULL;
  char err[512] = "";
  if (ceb_store_open(&o, &st, err, sizeof err) != CEB_OK) {
    fprintf(stderr, "open %s: %s\n", instance, err);
    return NULL;
  }
  return st;
}

int main(void) {
  ceb_test_pg_require();
  static pg_ctx c; /* the harness state is large */
  if (ceb_test_pg_start(&c.pg, "store-contract-pg") != 0) {
    CHECK(0);
    return ceb_test_done("store_contract_postgres");
  }
  ceb_store_contract_env env = {
      .engine = "postgresql", .fresh = fresh, .open = open_as, .ctx = &c};
  ceb_store_contract_run(&env);
  /* a URI picks this engine too, and the store is shared */
  CHECK(fresh(&c, "uri") == CEB_OK);
  snprintf(c.conninfo, sizeof c.conninfo, "%s", c.pg.uri);
  ceb_store *st = open_as(&c, "a");
  CHECK(st != NULL);
  if (st) CHECK_STR(ceb_store_engine_name(st), "postgresql");
  if (st) CHECK_STR(ceb_store_instance(st), "a");
  if (st) CHECK_INT(ceb_store_shared(st), 1);
  ceb_store_close(st);
  ceb_test_pg_cleanup(&c.pg);
  return ceb_test_done("store_contract_postgres");
}
