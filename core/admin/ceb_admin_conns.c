/* The admin API's connection guard (ceb_admin_conns.h says why and how):
 * lib/mhd_guard bound to the admin API's keys, metrics and log. */
#include "admin/ceb_admin_conns.h"

#include <stdio.h>
#include <stdlib.h>

#include "log/ceb_log.h"
#include "mhd_guard.h"

struct ceb_admin_conns {
  ceb_metrics *metrics; /* borrowed */
  ceb_admin_conns_cfg cfg;
  mhd_guard *guard;
};

static void on_closed(void *arg, mhd_guard_reason why) {
  ceb_admin_conns *g = arg;
  char labels[48];
  snprintf(labels, sizeof labels, "reason=\"%s\"", mhd_guard_reason_code(why));
  ceb_metrics_add(g->metrics, "cebridge_admin_connections_closed_total", labels,
                  1);
}

static void describe(void *arg, mhd_guard_reason why, char *buf, size_t n) {
  const ceb_admin_conns_cfg *c = &((ceb_admin_conns *)arg)->cfg;
  if (why == MHD_GUARD_HEAD_TIMEOUT)
    snprintf(buf, n,
             "request head not complete within admin.request_head_timeout "
             "(%lld ms; %lld ms for the next request of a kept-alive "
             "connection)",
             (long long)c->head_ms, (long long)c->keepalive_ms);
  else if (why == MHD_GUARD_BODY_TIMEOUT)
    snprintf(buf, n,
             "request body not complete within admin.request_body_timeout "
             "(%lld ms)",
             (long long)c->body_ms);
  else
    snprintf(buf, n,
             "waiting longest for a request head while all %u connections "
             "were taken (closed for a new client)",
             c->max_conn);
}

/* ceb_log escapes control characters of what it is handed (a client's
 * address is inet_ntop's text; libmicrohttpd's messages may quote a
 * client's bytes). */
static void warn(void *arg, const char *line) {
  (void)arg;
  ceb_log_warn("%s", line);
}

ceb_admin_conns *ceb_admin_conns_new(ceb_metrics *metrics,
                                     const ceb_admin_conns_cfg *cfg) {
  ceb_admin_conns *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->metrics = metrics;
  g->cfg = *cfg;
  mhd_guard_cfg mc = {.head_ms = cfg->head_ms,
                      .keepalive_ms = cfg->keepalive_ms,
                      .body_ms = cfg->body_ms,
                      .min_rate = 0, /* the admin API takes small bodies */
                      .sweep_ms = 100,
                      .log_prefix = "admin API: ",
                      .thread_name = "admin-guard"};
  mhd_guard_hooks h = {
      .arg = g, .closed = on_closed, .describe = describe, .warn = warn};
  g->guard = mhd_guard_new(&mc, &h);
  if (!g->guard) {
    free(g);
    return NULL;
  }
  return g;
}

void ceb_admin_conns_free(ceb_admin_conns *g) {
  if (!g) return;
  mhd_guard_free(g->guard);
  free(g);
}

ceb_admin_conn *ceb_admin_conns_opened(ceb_admin_conns *g,
                                       struct MHD_Connection *c) {
  return g ? mhd_guard_opened(g->guard, c) : NULL;
}

void ceb_admin_conns_closed(ceb_admin_conns *g, ceb_admin_conn *rec) {
  if (g) mhd_guard_closed(g->guard, rec);
}

int ceb_admin_conns_admit(ceb_admin_conns *g) {
  if (!g) return 1;
  /* a slot for the new connection, or the one waiting longest for its
   * head gives up its own */
  return mhd_guard_live(g->guard) < g->cfg.max_conn ||
         mhd_guard_evict(g->guard);
}

void ceb_admin_conns_head_done(struct MHD_Connection *c) {
  mhd_guard_head_done(c);
}

int ceb_admin_conns_busy(struct MHD_Connection *c) {
  return mhd_guard_busy(c);
}

void ceb_admin_conns_done(struct MHD_Connection *c) {
  mhd_guard_request_done(c);
}

void ceb_admin_conns_mhd_log(void *cls, const char *fmt, va_list ap) {
  ceb_admin_conns *g = cls;
  if (g) mhd_guard_mhd_log(g->guard, fmt, ap);
}
