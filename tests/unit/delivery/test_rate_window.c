/* The route's recent-outcome window behind /v1/routes' throughput and
 * failure rate: counts the last 60 s only, forgets a bucket when its second
 * comes round again, and an idle minute reads as zero without any write. */
#include "ceb_test.h"
#include "delivery/ceb_rate_window.h"

int main(void) {
  ceb_rate_window w = {0};
  uint64_t ok = 9, failed = 9;
  int64_t t0 = 1700000000000; /* ms */
  ceb_rate_window_sum(&w, t0, &ok, &failed);
  CHECK_INT(ok, 0);
  CHECK_INT(failed, 0);
  for (int i = 0; i < 30; i++)
    ceb_rate_window_add(&w, t0 + i * 1000, 1);
  for (int i = 0; i < 10; i++)
    ceb_rate_window_add(&w, t0 + 500, 0);
  ceb_rate_window_sum(&w, t0 + 29000, &ok, &failed);
  CHECK_INT(ok, 30);
  CHECK_INT(failed, 10);
  /* 59 s after the first second it still counts; 60 s after, it is out */
  ceb_rate_window_sum(&w, t0 + 59000, &ok, &failed);
  CHECK_INT(ok, 30);
  CHECK_INT(failed, 10);
  ceb_rate_window_sum(&w, t0 + 60000, &ok, &failed);
  CHECK_INT(ok, 29);
  CHECK_INT(failed, 0);
  /* a write 60 s later lands in the first second's bucket and clears it */
  ceb_rate_window_add(&w, t0 + 60000, 0);
  ceb_rate_window_sum(&w, t0 + 60000, &ok, &failed);
  CHECK_INT(ok, 29);
  CHECK_INT(failed, 1);
  /* an idle hour later: nothing */
  ceb_rate_window_sum(&w, t0 + 3600000, &ok, &failed);
  CHECK_INT(ok, 0);
  CHECK_INT(failed, 0);
  return ceb_test_done("unit_delivery_rate_window");
}
