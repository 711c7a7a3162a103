#include "delivery/ceb_retry.h"

#include <stdio.h>
#include <stdlib.h>

#include <ceb/config.h>
#include <ceb/status.h>

int ceb_retry_parse_schedule(ceb_retry_policy *p, const char *const *items,
                             size_t count, char *err, size_t errlen) {
  if (count == 0) {
    snprintf(err, errlen, "retry.schedule is empty");
    return CEB_EINVAL;
  }
  int64_t *s = calloc(count, sizeof *s);
  if (!s) return CEB_ENOMEM;
  for (size_t i = 0; i < count; i++) {
    if (ceb_parse_duration_ms(items[i], &s[i]) != CEB_OK || s[i] < 0) {
      snprintf(err, errlen, "retry.schedule: '%s' is not a duration", items[i]);
      free(s);
      return CEB_EINVAL;
    }
  }
  free(p->schedule);
  p->schedule = s;
  p->nschedule = count;
  return CEB_OK;
}

void ceb_retry_policy_clear(ceb_retry_policy *p) {
  free(p->schedule);
  p->schedule = NULL;
  p->nschedule = 0;
}

int64_t ceb_retry_first_delay(const ceb_retry_policy *p) {
  return !p->exponential && p->nschedule ? p->schedule[0] : 0;
}

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

ceb_retry_verdict ceb_retry_next(const ceb_retry_policy *p, uint32_t attempt,
                                 int64_t now, int64_t accepted_at,
                                 int64_t retry_after_ms, uint64_t *rng,
                                 int64_t *next_at) {
  if (p->max_attempts && attempt >= p->max_attempts) return CEB_RETRY_EXHAUSTED;
  int64_t delay;
  if (!p->exponential) {
    /* schedule[k] is the delay before attempt k+1 */
    if (attempt < p->nschedule)
      delay = p->schedule[attempt];
    else if (p->max_attempts && p->nschedule)
      delay = p->schedule[p->nschedule - 1]; /* repeat the last step */
    else
      return CEB_RETRY_EXHAUSTED;
  } else {
    int64_t cap = p->base_ms;
    for (uint32_t i = 1; i < attempt && cap < p->max_delay_ms; i++)
      cap *= 2;
    if (cap > p->max_delay_ms) cap = p->max_delay_ms;
    delay = cap > 0 ? (int64_t)(xorshift(rng) % (uint64_t)(cap + 1)) : 0;
  }
  if (retry_after_ms > delay) delay = retry_after_ms;
  int64_t at = now + delay;
  if (p->deadline_ms > 0 && at > accepted_at + p->deadline_ms)
    return CEB_RETRY_DEADLINE;
  *next_at = at;
  return CEB_RETRY_AGAIN;
}
