/* The per-key metrics' labels (ceb_key_metrics.h): allow-listed keys always
 * have their own, the top N of the others by events counted for sure get
 * theirs at a rank, every other key is "other"; a flood of a million
 * distinct keys neither labels more than N nor holds more than the
 * ranking's slots, and a key that leaves the top N is reported gone. */
#include <stdio.h>
#include <string.h>

#include "ceb_test.h"
#include "delivery/ceb_key_metrics.h"

static char gone_keys[8][64];
static int ngone;

static void on_gone(void *arg, const char *key) {
  (void)arg;
  if (ngone < 8) snprintf(gone_keys[ngone], sizeof gone_keys[0], "%s", key);
  ngone++;
}

static void seen_n(ceb_key_metrics *k, const char *key, int n) {
  for (int i = 0; i < n; i++)
    ceb_key_metrics_seen(k, key);
}

int main(void) {
  /* nothing to label: no accounting at all */
  CHECK(ceb_key_metrics_new(NULL, 0, 0) == NULL);
  CHECK(ceb_key_metrics_new(NULL, 0, CEB_KEY_METRICS_MAX + 1) == NULL);

  /* allow-list only */
  const char *allow[] = {"inst-a", "inst-b", "inst-a"};
  ceb_key_metrics *k = ceb_key_metrics_new(allow, 3, 0);
  CHECK(k != NULL);
  CHECK_INT(ceb_key_metrics_count(k), 2); /* the twice-named key once */
  CHECK_STR(ceb_key_metrics_label(k, "inst-a"), "inst-a");
  CHECK_STR(ceb_key_metrics_label(k, "inst-b"), "inst-b");
  seen_n(k, "inst-c", 100);
  ceb_key_metrics_rank(k, on_gone, NULL);
  CHECK_STR(ceb_key_metrics_label(k, "inst-c"), "other");
  CHECK_INT(ceb_key_metrics_count(k), 2);
  ceb_key_metrics_free(k);

  /* allow-list and top 2 */
  k = ceb_key_metrics_new(allow, 2, 2);
  CHECK(k != NULL);
  seen_n(k, "inst-a", 50); /* allow-listed: never takes a top place */
  seen_n(k, "x", 30);
  seen_n(k, "y", 20);
  seen_n(k, "z", 10);
  /* before the first rank only the allow-list is labelled */
  CHECK_STR(ceb_key_metrics_label(k, "x"), "other");
  ceb_key_metrics_rank(k, on_gone, NULL);
  CHECK_INT(ngone, 0);
  CHECK_INT(ceb_key_metrics_count(k), 4);
  CHECK_STR(ceb_key_metrics_at(k, 0), "inst-a");
  CHECK_STR(ceb_key_metrics_at(k, 1), "inst-b");
  CHECK_STR(ceb_key_metrics_at(k, 2), "x");
  CHECK_STR(ceb_key_metrics_at(k, 3), "y");
  CHECK(ceb_key_metrics_at(k, 4) == NULL);
  CHECK_STR(ceb_key_metrics_label(k, "x"), "x");
  CHECK_STR(ceb_key_metrics_label(k, "y"), "y");
  CHECK_STR(ceb_key_metrics_label(k, "z"), "other");

  /* a hostile flood: a million keys seen once each. The ranking keeps its
   * 16 slots, a key seen once is never counted for sure above 1, so the
   * steady keys keep their places and nothing of the flood is labelled */
  char key[32];
  for (int i = 0; i < 1000000; i++) {
    snprintf(key, sizeof key, "flood-%d", i);
    ceb_key_metrics_seen(k, key);
  }
  seen_n(k, "x", 40);
  seen_n(k, "y", 40);
  ceb_key_metrics_rank(k, on_gone, NULL);
  CHECK_INT(ceb_key_metrics_count(k), 4);
  CHECK_STR(ceb_key_metrics_label(k, "flood-999999"), "other");
  CHECK_STR(ceb_key_metrics_label(k, "flood-5"), "other");
  CHECK_INT(ngone, 0);

  /* z overtakes y: y is reported gone and counts as "other" again */
  seen_n(k, "z", 500);
  ceb_key_metrics_rank(k, on_gone, NULL);
  CHECK_INT(ngone, 1);
  CHECK_STR(gone_keys[0], "y");
  CHECK_STR(ceb_key_metrics_label(k, "z"), "z");
  CHECK_STR(ceb_key_metrics_label(k, "y"), "other");
  CHECK_INT(ceb_key_metrics_count(k), 4);

  /* a key too long for a label is "other" */
  char longkey[CEB_KEY_METRICS_KEY_MAX + 2];
  memset(longkey, 'k', sizeof longkey - 1);
  longkey[sizeof longkey - 1] = '\0';
  seen_n(k, longkey, 10000);
  ceb_key_metrics_rank(k, on_gone, NULL);
  CHECK_STR(ceb_key_metrics_label(k, longkey), "other");
  ceb_key_metrics_free(k);

  /* only a flood: no key seen twice for sure, no place taken */
  k = ceb_key_metrics_new(NULL, 0, 2);
  for (int i = 0; i < 100000; i++) {
    snprintf(key, sizeof key, "flood-%d", i);
    ceb_key_metrics_seen(k, key);
  }
  ceb_key_metrics_rank(k, on_gone, NULL);
  CHECK_INT(ceb_key_metrics_count(k), 0);
  ceb_key_metrics_free(k);

  /* labels: the exposition format's escapes */
  char buf[128];
  CHECK_INT(
      ceb_key_metrics_labels(buf, sizeof buf, "route=\"r\"", "a\"b\\c\nd"), 0);
  CHECK_STR(buf, "route=\"r\",key=\"a\\\"b\\\\c\\nd\"");
  CHECK_INT(ceb_key_metrics_labels(buf, 16, "route=\"r\"", "abcdefghij"), -1);
  return ceb_test_done("unit_delivery_key_metrics");
}
