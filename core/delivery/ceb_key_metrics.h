/* Which ordering keys of a route get their own label in the per-key
 * metrics (cebridge_key_*), with a bound on how many: the operator's
 * allow-list ([route] metrics.keys) and the top N of the other keys by
 * events journaled ([route] metrics.keys_top); every other key is counted
 * under key="other". However many distinct keys clients send, a route has
 * at most nallow + top + 1 label values, and the ranking keeps at most
 * CEB_KEY_METRICS_SLOTS(top) keys in memory (the Space-Saving algorithm,
 * Metwally et al. 2005: a key not held replaces the least counted one).
 *
 * Not thread-safe: the delivery engine holds its lock around every call. */
#ifndef CEB_KEY_METRICS_H
#define CEB_KEY_METRICS_H

#include <stddef.h>

/* Most keys in metrics.keys, and most metrics.keys_top. */
#define CEB_KEY_METRICS_MAX 100
/* Longest key that gets a label of its own (bytes); a longer one is
 * counted under "other". */
#define CEB_KEY_METRICS_KEY_MAX 200
/* Keys the ranking holds for a top N: a key whose share of the events is
 * above 1 / this is always among them. */
#define CEB_KEY_METRICS_SLOTS(top) ((top) ? 8 * (size_t)(top) : 0)

typedef struct ceb_key_metrics ceb_key_metrics;

/* allow: nallow keys that always have their own label (copied; at most
 * CEB_KEY_METRICS_MAX, each at most CEB_KEY_METRICS_KEY_MAX bytes); top:
 * how many other keys get one (0..CEB_KEY_METRICS_MAX). NULL when out of
 * memory, when the bounds are broken, or when there is nothing to label
 * (no allow-list and top 0): no per-key metrics. */
ceb_key_metrics *ceb_key_metrics_new(const char *const *allow, size_t nallow,
                                     unsigned top);
void ceb_key_metrics_free(ceb_key_metrics *k);

/* An event of key was journaled on the route: ranks it. */
void ceb_key_metrics_seen(ceb_key_metrics *k, const char *key);

/* The label value key's outcomes count under now: key itself (allow-list,
 * or in the top N as of the last ceb_key_metrics_rank) or "other". The
 * pointer is key or a static string. */
const char *ceb_key_metrics_label(const ceb_key_metrics *k, const char *key);

/* Takes the current top N from the ranking (by events counted for sure,
 * so a flood of keys seen once each does not push out the steady ones).
 * gone(arg, key) is called for each key that lost its own label (its
 * series should go); the key string is valid during the call only. */
void ceb_key_metrics_rank(ceb_key_metrics *k,
                          void (*gone)(void *arg, const char *key), void *arg);

/* The keys with their own label now: allow-list first, then the top N. */
size_t ceb_key_metrics_count(const ceb_key_metrics *k);
const char *ceb_key_metrics_at(const ceb_key_metrics *k, size_t i);

/* Writes `route_labels,key="<key escaped>"` (backslash, double quote and
 * newline escaped as the exposition format asks). 0, or -1 when it does
 * not fit. */
int ceb_key_metrics_labels(char *buf, size_t size, const char *route_labels,
                           const char *key);

#endif
