/* Retry policy of a route: an explicit schedule ("0s 5s 5m ...": the delay
 * before attempt 1, 2, ...) or exponential backoff with full jitter, capped
 * by max_attempts and by the route's deadline since acceptance. Pure
 * functions; a policy is immutable after parsing and may be shared. */
#ifndef CEB_RETRY_H
#define CEB_RETRY_H

#include <stddef.h>
#include <stdint.h>

typedef struct ceb_retry_policy {
  int exponential;   /* 0: schedule */
  int64_t *schedule; /* delays in ms, owned; nschedule >= 1 */
  size_t nschedule;
  int64_t base_ms;       /* exponential: the first retry's delay cap */
  int64_t max_delay_ms;  /* exponential: largest delay */
  uint32_t max_attempts; /* 0: the schedule's length / unlimited (exp.) */
  int64_t deadline_ms;   /* since acceptance */
} ceb_retry_policy;

/* Parses schedule items ("0s", "5m", ...) into p->schedule. CEB_OK or
 * CEB_EINVAL with the bad item named in err. */
int ceb_retry_parse_schedule(ceb_retry_policy *p, const char *const *items,
                             size_t count, char *err, size_t errlen);
void ceb_retry_policy_clear(ceb_retry_policy *p);

/* Delay before the first attempt. */
int64_t ceb_retry_first_delay(const ceb_retry_policy *p);

typedef enum ceb_retry_verdict {
  CEB_RETRY_AGAIN = 0,     /* *next_at is set */
  CEB_RETRY_EXHAUSTED = 1, /* max attempts / schedule used up */
  CEB_RETRY_DEADLINE = 2   /* the next attempt would be past the deadline */
} ceb_retry_verdict;

/* Decides after failed attempt number `attempt` (1-based) at now, for an
 * event accepted at accepted_at. retry_after_ms (< 0: none) is a minimum
 * wait. rng is the caller's xorshift state (used by exponential jitter). */
ceb_retry_verdict ceb_retry_next(const ceb_retry_policy *p, uint32_t attempt,
                                 int64_t now, int64_t accepted_at,
                                 int64_t retry_after_ms, uint64_t *rng,
                                 int64_t *next_at);

#endif
