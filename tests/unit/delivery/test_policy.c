/* Retry schedule and exponential backoff with the deadline, Retry-After
 * and max attempts; circuit breaker transitions; token bucket. */
#include <ceb/status.h>

#include "ceb_test.h"
#include "delivery/ceb_circuit.h"
#include "delivery/ceb_retry.h"
#include "delivery/ceb_token_bucket.h"

int main(void) {
  char err[128];
  ceb_retry_policy p = {.deadline_ms = 72LL * 3600 * 1000};
  const char *sched[] = {"0s", "5s", "5m", "30m"};
  CHECK_INT(ceb_retry_parse_schedule(&p, sched, 4, err, sizeof err), 0);
  CHECK_INT(ceb_retry_first_delay(&p), 0);
  uint64_t rng = 42;
  int64_t at = 0;
  CHECK_INT(ceb_retry_next(&p, 1, 1000, 0, -1, &rng, &at), CEB_RETRY_AGAIN);
  CHECK_INT(at, 6000);
  CHECK_INT(ceb_retry_next(&p, 2, 1000, 0, -1, &rng, &at), CEB_RETRY_AGAIN);
  CHECK_INT(at, 1000 + 300000);
  CHECK_INT(ceb_retry_next(&p, 3, 1000, 0, -1, &rng, &at), CEB_RETRY_AGAIN);
  CHECK_INT(at, 1000 + 1800000);
  CHECK_INT(ceb_retry_next(&p, 4, 1000, 0, -1, &rng, &at), CEB_RETRY_EXHAUSTED);
  /* Retry-After is a minimum */
  CHECK_INT(ceb_retry_next(&p, 1, 1000, 0, 60000, &rng, &at), CEB_RETRY_AGAIN);
  CHECK_INT(at, 61000);
  CHECK_INT(ceb_retry_next(&p, 2, 1000, 0, 10, &rng, &at), CEB_RETRY_AGAIN);
  CHECK_INT(at, 301000);
  /* deadline */
  p.deadline_ms = 100000;
  CHECK_INT(ceb_retry_next(&p, 2, 1000, 0, -1, &rng, &at), CEB_RETRY_DEADLINE);
  CHECK_INT(ceb_retry_next(&p, 1, 1000, 0, -1, &rng, &at), CEB_RETRY_AGAIN);
  /* max_attempts beyond the schedule repeats its last step; below cuts */
  p.deadline_ms = 0;
  p.max_attempts = 6;
  CHECK_INT(ceb_retry_next(&p, 5, 0, 0, -1, &rng, &at), CEB_RETRY_AGAIN);
  CHECK_INT(at, 1800000);
  CHECK_INT(ceb_retry_next(&p, 6, 0, 0, -1, &rng, &at), CEB_RETRY_EXHAUSTED);
  p.max_attempts = 2;
  CHECK_INT(ceb_retry_next(&p, 2, 0, 0, -1, &rng, &at), CEB_RETRY_EXHAUSTED);
  const char *bad[] = {"1s", "later"};
  CHECK_INT(ceb_retry_parse_schedule(&p, bad, 2, err, sizeof err), CEB_EINVAL);
  CHECK(strstr(err, "later") != NULL);
  CHECK_INT(ceb_retry_parse_schedule(&p, bad, 0, err, sizeof err), CEB_EINVAL);
  ceb_retry_policy_clear(&p);

  /* exponential, full jitter: within [0, min(max, base * 2^(n-1))] */
  ceb_retry_policy e = {
      .exponential = 1, .base_ms = 1000, .max_delay_ms = 8000};
  CHECK_INT(ceb_retry_first_delay(&e), 0);
  int64_t maxseen[6] = {0};
  for (int i = 0; i < 2000; i++)
    for (uint32_t n = 1; n <= 5; n++) {
      CHECK_INT(ceb_retry_next(&e, n, 0, 0, -1, &rng, &at), CEB_RETRY_AGAIN);
      if (at > maxseen[n]) maxseen[n] = at;
      if (at < 0 || at > (n >= 4 ? 8000 : 1000 << (n - 1)))
        CHECK_MSG(0, "attempt %u delay %lld out of range", n, (long long)at);
    }
  CHECK(maxseen[1] > 500 && maxseen[5] > 4000); /* jitter spans the range */
  e.max_attempts = 3;
  CHECK_INT(ceb_retry_next(&e, 3, 0, 0, -1, &rng, &at), CEB_RETRY_EXHAUSTED);

  /* circuit breaker */
  ceb_circuit c;
  ceb_circuit_init(&c, 3, 1000);
  CHECK_INT(ceb_circuit_allow(&c, 0, 10), 10);
  ceb_circuit_failure(&c, 0);
  ceb_circuit_failure(&c, 0);
  ceb_circuit_success(&c); /* resets the run */
  ceb_circuit_failure(&c, 0);
  ceb_circuit_failure(&c, 0);
  CHECK_INT(c.state, CEB_CIRCUIT_CLOSED);
  ceb_circuit_failure(&c, 50);
  CHECK_INT(c.state, CEB_CIRCUIT_OPEN);
  CHECK_INT(ceb_circuit_allow(&c, 1049, 10), 0);
  CHECK_INT(ceb_circuit_allow(&c, 1050, 10), 1); /* half-open: one probe */
  CHECK_STR(ceb_circuit_state_name(c.state), "half-open");
  ceb_circuit_started(&c);
  CHECK_INT(ceb_circuit_allow(&c, 1050, 10), 0);
  ceb_circuit_failure(&c, 1100); /* probe failed: open again */
  CHECK_INT(c.state, CEB_CIRCUIT_OPEN);
  CHECK_INT(ceb_circuit_allow(&c, 2099, 10), 0);
  CHECK_INT(ceb_circuit_allow(&c, 2100, 10), 1);
  ceb_circuit_started(&c);
  ceb_circuit_success(&c);
  CHECK_INT(ceb_circuit_allow(&c, 2100, 10), 10);
  ceb_circuit_trip(&c, 3000); /* HTTP 410: open at once */
  CHECK_INT(ceb_circuit_allow(&c, 3000, 10), 0);
  CHECK_STR(ceb_circuit_state_name(c.state), "open");

  /* token bucket: 10/s, burst 5 */
  ceb_token_bucket b;
  ceb_token_bucket_init(&b, 10, 5, 0);
  CHECK_INT(ceb_token_bucket_available(&b, 0, 100), 5);
  ceb_token_bucket_take(&b, 5);
  CHECK_INT(ceb_token_bucket_available(&b, 0, 100), 0);
  CHECK_INT(ceb_token_bucket_next(&b, 0), 100);
  CHECK_INT(ceb_token_bucket_available(&b, 99, 100), 0);
  CHECK_INT(ceb_token_bucket_available(&b, 100, 100), 1);
  CHECK_INT(ceb_token_bucket_available(&b, 10000, 100), 5); /* capped */
  ceb_token_bucket u;
  ceb_token_bucket_init(&u, 0, 0, 0);
  CHECK_INT(ceb_token_bucket_available(&u, 0, 77), 77); /* unlimited */
  ceb_token_bucket_init(&u, 100, 0, 0);
  CHECK_INT(ceb_token_bucket_available(&u, 0, 1000), 100); /* 1 s worth */
  return ceb_test_done("unit_delivery_policy");
}
