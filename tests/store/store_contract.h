/* The store contract: what every store engine must do, as one suite of
 * test functions over an open ceb_store (core/store/ceb_store.h). An
 * engine passes it to be an engine; each engine has a runner that says how
 * to make an empty store of it and open handles on it (run_sqlite.c; the
 * PostgreSQL engine's beside it), then calls ceb_store_contract_run.
 *
 * Times are the suite's own (ms, passed as `now`): an engine decides due
 * times, lease ends and expiries by the now it is given, never by a clock
 * of its own, so nothing here sleeps.
 *
 * Two handles opened with different instance ids on one store stand for
 * two bridges. What must hold across them on every engine: claims, leases,
 * fences and FIFO (they live in the store's rows). What must hold across
 * them only on a shared engine (ceb_store_shared() == 1): dedupe and
 * idempotency reservations, which the SQLite engine keeps partly in the
 * memory of its one process. */
#ifndef CEB_STORE_CONTRACT_H
#define CEB_STORE_CONTRACT_H

#include "store/ceb_store.h"

typedef struct ceb_store_contract_env {
  const char *engine; /* for the report: "sqlite", "postgresql" */
  /* Makes a new, empty store that later opens go to; tag names it (for
   * a temp dir or a database name). CEB_OK or < 0. */
  int (*fresh)(void *ctx, const char *tag);
  /* Opens a handle on the current store claiming as instance (never NULL
   * or ""), with the store's shortest lease at 60 s. NULL on error (the
   * runner reports why). Closed with ceb_store_close. */
  ceb_store *(*open)(void *ctx, const char *instance);
  void *ctx;
} ceb_store_contract_env;

/* Runs every contract test against env's engine; failures are counted by
 * the CHECK macros of ceb_test.h (the runner ends with ceb_test_done). */
void ceb_store_contract_run(const ceb_store_contract_env *env);

#endif
