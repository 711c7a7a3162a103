/* Every family rendered by ceb_metrics_render has HELP and TYPE: declared
 * text (escaped as the exposition format wants), else the catalogue's for
 * plugin families, else a generic line; process_* and build info read from
 * /proc are set with their standard names. */
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>
#include <ceb/plugin.h>

#include "ceb_test.h"
#include "metrics/ceb_metrics.h"
#include "metrics/ceb_metrics_help.h"
#include "metrics/ceb_metrics_process.h"

int main(void) {
  ceb_metrics *m = ceb_metrics_new();
  CHECK(m != NULL);
  ceb_metrics_declare(m, "cebridge_x_total", CEB_MT_COUNTER, "a\\b\nnext line");
  ceb_metrics_add(m, "cebridge_x_total", "", 2);
  /* recorded through the plugin host call: never declared */
  ceb_metrics_add(m, "cebridge_http_requests_total", "code=\"202\"", 1);
  ceb_metrics_set(m, "cebridge_unheard_of", "", 3);
  CHECK(ceb_metrics_process_refresh(m) == 6);
  ceb_metrics_build_info(m);
  char *t = ceb_metrics_render(m);
  CHECK(t != NULL);
  if (t) {
    CHECK(strstr(t, "# HELP cebridge_x_total a\\\\b\\nnext line\n"
                    "# TYPE cebridge_x_total counter\n"
                    "cebridge_x_total 2\n") != NULL);
    CHECK(strstr(t, "# HELP cebridge_http_requests_total Intermediary "
                    "requests by status code.\n"
                    "# TYPE cebridge_http_requests_total counter\n") != NULL);
    CHECK(strstr(t, "# HELP cebridge_unheard_of " CEB_METRICS_HELP_UNKNOWN
                    "\n# TYPE cebridge_unheard_of gauge\n") != NULL);
    char bi[96];
    snprintf(bi, sizeof bi,
             "cebridge_build_info{version=\"%s\",abi=\"%d.%d\"} 1\n",
             CEB_VERSION, CEB_ABI_MAJOR, CEB_ABI_MINOR);
    CHECK_MSG(strstr(t, bi) != NULL, "no %s", bi);
    const char *names[] = {"process_cpu_seconds_total counter",
                           "process_resident_memory_bytes gauge",
                           "process_virtual_memory_bytes gauge",
                           "process_open_fds gauge",
                           "process_max_fds gauge",
                           "process_start_time_seconds gauge",
                           "cebridge_build_info gauge"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      char line[128];
      snprintf(line, sizeof line, "# TYPE %s\n", names[i]);
      CHECK_MSG(strstr(t, line) != NULL, "no %s", line);
    }
    /* every TYPE line follows a HELP line of the same family */
    int types = 0;
    for (const char *p = strstr(t, "# TYPE "); p;
         p = strstr(p + 1, "# TYPE ")) {
      types++;
      const char *name = p + 7;
      size_t len = strcspn(name, " ");
      const char *prev = p - 1;
      while (prev > t && prev[-1] != '\n')
        prev--;
      CHECK_MSG(strncmp(prev, "# HELP ", 7) == 0 &&
                    strncmp(prev + 7, name, len) == 0 && prev[7 + len] == ' ',
                "no HELP before TYPE %.*s", (int)len, name);
    }
    CHECK_INT(types, 10);
  }
  free(t);
  ceb_metrics_free(m);

  /* A constant label (the bridge's instance id) leads every series' labels,
   * histograms' buckets, sums and counts included, escaped; NULL drops it;
   * a bad label name is refused. */
  m = ceb_metrics_new();
  ceb_metrics_add(m, "c_total", NULL, 1);
  ceb_metrics_set(m, "g", "route=\"r\"", 2);
  ceb_metrics_observe(m, "h_seconds", NULL, 0.001);
  CHECK_INT(ceb_metrics_set_const_label(m, "instance", "a\"b\\c\nd"), 0);
  CHECK_INT(ceb_metrics_set_const_label(m, "1bad", "x"), -1);
  CHECK_INT(ceb_metrics_set_const_label(m, "in-stance", "x"), -1);
  t = ceb_metrics_render(m);
  CHECK(t && strstr(t, "c_total{instance=\"a\\\"b\\\\c\\nd\"} 1\n"));
  CHECK(t && strstr(t, "g{instance=\"a\\\"b\\\\c\\nd\",route=\"r\"} 2\n"));
  CHECK(t && strstr(t, "h_seconds_bucket{instance=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 1\n"));
  CHECK(t && strstr(t, "h_seconds_count{instance=\"a\\\"b\\\\c\\nd\"} 1\n"));
  free(t);
  CHECK_INT(ceb_metrics_set_const_label(m, "instance", NULL), 0);
  t = ceb_metrics_render(m);
  CHECK(t && strstr(t, "c_total 1\n") && !strstr(t, "instance="));
  free(t);
  ceb_metrics_free(m);
  return ceb_test_done("unit_metrics_render");
}
