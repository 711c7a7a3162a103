/* Per-key metrics of the routes that ask for them ([route] metrics.keys,
 * metrics.keys_top): outcomes counted per ordering key as they are
 * recorded, and the open events per key counted in the store at scrape
 * time, under at most the allow-list, the top N and "other" as label
 * values (ceb_key_metrics.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delivery/engine_internal.h"

#define KM_DELIVERED "cebridge_key_events_delivered_total"
#define KM_FAILED "cebridge_key_attempts_failed_total"
#define KM_DEAD "cebridge_key_events_dead_total"
#define KM_OPEN "cebridge_key_events_open"

void cebe_declare_key_metrics(ceb_metrics *m) {
  ceb_metrics_declare(m, KM_DELIVERED, CEB_MT_COUNTER,
                      "Events delivered per route and ordering key (keys of "
                      "metrics.keys and the metrics.keys_top busiest; the "
                      "rest under key=\"other\").");
  ceb_metrics_declare(m, KM_FAILED, CEB_MT_COUNTER,
                      "Failed delivery attempts (retried or dead-lettered) "
                      "per route and ordering key.");
  ceb_metrics_declare(m, KM_DEAD, CEB_MT_COUNTER,
                      "Events dead-lettered per route and ordering key.");
  ceb_metrics_declare(m, KM_OPEN, CEB_MT_GAUGE,
                      "Open (not yet delivered or dead-lettered) events per "
                      "route and ordering key, from the store at scrape "
                      "time.");
}

void cebe_key_outcome(ceb_engine *e, size_t route, const char *key, int state) {
  eng_route *rt = &e->routes[route];
  if (!rt->km || !key || !e->metrics || state == CEB_DS_PENDING) return;
  char labels[CEB_KEY_METRICS_KEY_MAX * 2 + 200];
  pthread_mutex_lock(&e->lock);
  /* the label is copied under the lock: a rank may drop the key's own */
  int rc = ceb_key_metrics_labels(labels, sizeof labels, rt->labels,
                                  ceb_key_metrics_label(rt->km, key));
  pthread_mutex_unlock(&e->lock);
  if (rc != 0) return;
  if (state == CEB_DS_DONE) {
    ceb_metrics_add(e->metrics, KM_DELIVERED, labels, 1);
    return;
  }
  ceb_metrics_add(e->metrics, KM_FAILED, labels, 1);
  if (state == CEB_DS_DEAD) ceb_metrics_add(e->metrics, KM_DEAD, labels, 1);
}

typedef struct gone_list {
  char **keys;
  size_t n, cap;
} gone_list;

static void note_gone(void *arg, const char *key) {
  gone_list *g = arg;
  if (g->n == g->cap) {
    size_t ncap = g->cap ? g->cap * 2 : 8;
    char **k = realloc(g->keys, ncap * sizeof *k);
    if (!k) return; /* its series stays until the next time it goes */
    g->keys = k;
    g->cap = ncap;
  }
  if ((g->keys[g->n] = strdup(key)) != NULL) g->n++;
}

static void remove_key(ceb_engine *e, const char *route_labels,
                       const char *key) {
  static const char *const fams[] = {KM_DELIVERED, KM_FAILED, KM_DEAD, KM_OPEN};
  char labels[CEB_KEY_METRICS_KEY_MAX * 2 + 200];
  if (ceb_key_metrics_labels(labels, sizeof labels, route_labels, key) != 0)
    return;
  for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++)
    ceb_metrics_remove(e->metrics, fams[i], labels);
}

/* One route: the top N taken again, the series of keys that left it
 * removed, and the open gauges read from the store (outside the lock). */
static void route_gauges(ceb_engine *e, eng_route *rt) {
  gone_list g = {0};
  pthread_mutex_lock(&e->lock);
  ceb_key_metrics_rank(rt->km, note_gone, &g);
  size_t n = ceb_key_metrics_count(rt->km);
  char **keys = calloc(n ? n : 1, sizeof *keys);
  for (size_t i = 0; keys && i < n; i++)
    keys[i] = strdup(ceb_key_metrics_at(rt->km, i));
  pthread_mutex_unlock(&e->lock);
  for (size_t i = 0; i < g.n; i++) {
    remove_key(e, rt->labels, g.keys[i]);
    free(g.keys[i]);
  }
  free(g.keys);
  if (!keys) return;
  char labels[CEB_KEY_METRICS_KEY_MAX * 2 + 200];
  int64_t total = ceb_store_count_open(e->store, rt->cfg.name), own = 0;
  for (size_t i = 0; i < n; i++) {
    if (!keys[i]) continue;
    int64_t c =
        ceb_store_count_open_key(e->store, rt->cfg.name, keys[i], INT64_MAX);
    if (c >= 0 && ceb_key_metrics_labels(labels, sizeof labels, rt->labels,
                                         keys[i]) == 0) {
      ceb_metrics_set(e->metrics, KM_OPEN, labels, (double)c);
      own += c;
    }
    free(keys[i]);
  }
  free(keys);
  /* a key with its own label is never also "other": the rest is */
  if (total >= 0 &&
      ceb_key_metrics_labels(labels, sizeof labels, rt->labels, "other") == 0)
    ceb_metrics_set(e->metrics, KM_OPEN, labels,
                    (double)(total > own ? total - own : 0));
}

void ceb_engine_key_gauges(ceb_engine *e) {
  if (!e || !e->metrics) return;
  for (size_t i = 0; i < e->nroutes; i++)
    if (e->routes[i].km) route_gauges(e, &e->routes[i]);
}
