/* Metrics registry rendered as Prometheus text (/metrics).
 *
 * One registry per bridge (not a singleton); every function is thread-safe.
 * A series is (name, labels) where labels is the inside of the braces,
 * e.g. "route=\"a\",code=\"503\"" (NULL or "" for none). Names get no prefix
 * here: callers pass full names ("cebridge_events_received_total"). */
#ifndef CEB_METRICS_H
#define CEB_METRICS_H

#include <stddef.h>

typedef struct ceb_metrics ceb_metrics;

typedef enum ceb_metric_type {
  CEB_MT_COUNTER = 0,
  CEB_MT_GAUGE = 1,
  CEB_MT_HISTOGRAM = 2
} ceb_metric_type;

ceb_metrics *ceb_metrics_new(void);
void ceb_metrics_free(ceb_metrics *m);

/* Declares a family's type and help text; optional (undeclared families are
 * rendered as untyped counters/gauges by first use). */
void ceb_metrics_declare(ceb_metrics *m, const char *name, ceb_metric_type type,
                         const char *help);

void ceb_metrics_add(ceb_metrics *m, const char *name, const char *labels,
                     double value);
void ceb_metrics_set(ceb_metrics *m, const char *name, const char *labels,
                     double value);
/* Sets a counter to a total kept elsewhere (monotonic at its source). */
void ceb_metrics_set_total(ceb_metrics *m, const char *name, const char *labels,
                           double value);
/* Observes a value in seconds into a histogram with latency buckets from
 * 0.5 ms to 60 s. */
void ceb_metrics_observe(ceb_metrics *m, const char *name, const char *labels,
                         double seconds);

/* Drops a series (a label value that must not stay: a key that lost its
 * own label in the per-key metrics); nothing when absent. */
void ceb_metrics_remove(ceb_metrics *m, const char *name, const char *labels);

/* Current value of a counter or gauge series (histograms: the count);
 * 0 when absent. For tests and the CLI. */
double ceb_metrics_get(ceb_metrics *m, const char *name, const char *labels);

/* Sets a label rendered first on every series of every family, e.g.
 * ("instance", "host-1234-ab12cd34"): bridges sharing one store tell their
 * series apart by it without each caller adding it. value is escaped as the
 * exposition format asks (backslash, double quote, newline). NULL value:
 * none again. CEB_OK-style: 0, or -1 out of memory or a name that is not a
 * label name ([a-zA-Z_][a-zA-Z0-9_]*). */
int ceb_metrics_set_const_label(ceb_metrics *m, const char *name,
                                const char *value);

/* Prometheus text exposition format 0.0.4; malloc'd, caller frees. */
char *ceb_metrics_render(ceb_metrics *m);

#endif
