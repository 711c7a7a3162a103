/* The bench's far-end check (mqtt_bench_track.h) is what makes bench_mqtt
 * exit 1 on a lost or reordered event: this proves it counts first
 * deliveries, duplicates, disorder and unparsable ids as documented. */
#include <stdio.h>

#include "ceb_test.h"
#include "mqtt_bench_track.h"

static void rec(mb_track *t, const char *id, const char *key) {
  char sent[32];
  snprintf(sent, sizeof sent, "%lld", (long long)(mb_now_us() - 1500));
  mb_track_record(t, id, -1, key, -1, sent, -1);
}

int main(void) {
  CHECK(mb_track_new(0, 1, 1) == NULL);
  CHECK(mb_track_new(1, 0, 1) == NULL);
  mb_track *t = mb_track_new(4, 2, 100);
  CHECK(t != NULL);
  if (!t) return ceb_test_done("test_mqtt_bench_track");
  rec(t, "mb-0-0", "key-1");
  rec(t, "mb-0-4", "key-1");
  rec(t, "mb-1-2", "key-1"); /* other stream: its own order */
  rec(t, "mw-0-9", "key-2"); /* any prefix: the last two numbers count */
  rec(t, "mb-0-4", "key-1"); /* the latest again: a duplicate */
  rec(t, "mb-0-3", "key-1"); /* older than the latest: disorder */
  rec(t, "mb-0-1", "key-7"); /* key out of range */
  rec(t, "mb-2-1", "key-1"); /* stream out of range */
  rec(t, "mb-x-1", "key-1"); /* not a number */
  mb_track_record(t, "mb-0-5", -1, "key-1", -1, NULL, 0); /* no stamp */
  mb_counts c;
  mb_track_snapshot(t, &c);
  CHECK_INT(c.delivered, 4);
  CHECK_INT(c.duplicates, 1);
  CHECK_INT(c.disorder, 1);
  CHECK_INT(c.unparsable, 4);
  CHECK_INT(c.bad_key, 1);
  CHECK_INT(c.bad_stream, 0);
  CHECK_INT(c.bad_seq, 3);
  CHECK_INT(c.bad_last, 4);
  CHECK(c.last_us >= c.first_us && c.first_us > 0);
  /* latencies of first deliveries only: each about 1.5 ms */
  const double ps[2] = {50, 100};
  int64_t lat[2] = {0, 0};
  CHECK_INT(mb_track_latency(t, ps, lat, 2), 0);
  CHECK(lat[0] >= 1500 && lat[0] < 1000000);
  CHECK(lat[1] >= lat[0]);
  mb_track_free(t);
  return ceb_test_done("test_mqtt_bench_track");
}
