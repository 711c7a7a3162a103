/* See ceb_rate_window.h. A bucket is reused when its second comes round
 * again: a stale second is cleared on write and skipped on read, so an
 * idle route needs no timer to age out. */
#include "delivery/ceb_rate_window.h"

#include <stddef.h>

void ceb_rate_window_add(ceb_rate_window *w, int64_t now_ms, int ok) {
  int64_t sec = now_ms / 1000;
  size_t i = (size_t)(sec % CEB_RATE_WINDOW_S);
  if (w->b[i].sec != sec) {
    w->b[i].sec = sec;
    w->b[i].ok = w->b[i].failed = 0;
  }
  if (ok)
    w->b[i].ok++;
  else
    w->b[i].failed++;
}

void ceb_rate_window_sum(const ceb_rate_window *w, int64_t now_ms, uint64_t *ok,
                         uint64_t *failed) {
  int64_t sec = now_ms / 1000;
  *ok = *failed = 0;
  for (size_t i = 0; i < CEB_RATE_WINDOW_S; i++) {
    if (w->b[i].sec > sec - CEB_RATE_WINDOW_S && w->b[i].sec <= sec) {
      *ok += w->b[i].ok;
      *failed += w->b[i].failed;
    }
  }
}
