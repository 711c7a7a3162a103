/* The SQLite engine's side of several bridges on one store: there is none.
 * A SQLite store serves one bridge (one process writes it; tools beside it
 * only read or make small admin writes), so it is never shared and this
 * bridge leads every task. */
#include <ceb/status.h>

#include "store/sqlite/store_internal.h"

int cebs_shared(cebs_store *st) {
  (void)st;
  return 0;
}

int cebs_try_lead(cebs_store *st, const char *task, int64_t now) {
  (void)now;
  if (!st || !task || !*task) return CEB_EINVAL;
  return 1;
}
