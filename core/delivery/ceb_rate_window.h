/* Recent outcome counts of one route: the last 60 one-second buckets of
 * delivered and failed attempts, for the admin API's throughput and
 * failure rate ("what is this route doing now?", which the cumulative
 * Prometheus counters only answer to a scraper that keeps history).
 * Not thread-safe: the engine holds its lock around every call. */
#ifndef CEB_RATE_WINDOW_H
#define CEB_RATE_WINDOW_H

#include <stdint.h>

#define CEB_RATE_WINDOW_S 60

typedef struct ceb_rate_window {
  struct {
    int64_t sec; /* the second (now_ms / 1000) this bucket counts */
    uint32_t ok, failed;
  } b[CEB_RATE_WINDOW_S];
} ceb_rate_window;

/* Counts one outcome at now_ms (ok: delivered; else a failed attempt). */
void ceb_rate_window_add(ceb_rate_window *w, int64_t now_ms, int ok);
/* Sums the buckets of the CEB_RATE_WINDOW_S seconds up to now_ms. */
void ceb_rate_window_sum(const ceb_rate_window *w, int64_t now_ms, uint64_t *ok,
                         uint64_t *failed);

#endif
