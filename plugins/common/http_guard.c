/* The plugins' connection guard (http_guard.h): lib/mhd_guard bound to a
 * plugin's host, metrics and config keys. */
#include "http_guard.h"

#include <stdio.h>
#include <stdlib.h>

#include "mhd_guard.h"

_Static_assert((int)HTTP_CLOSE_NREASONS == (int)MHD_GUARD_NREASONS &&
                   (int)HTTP_CLOSE_BODY_TOO_LARGE ==
                       (int)MHD_GUARD_BODY_TOO_LARGE &&
                   (int)HTTP_CLOSE_EVICTED == (int)MHD_GUARD_EVICTED,
               "http_close_reason follows mhd_guard_reason");

struct http_guard {
  const ceb_host *host;
  ceb_instance *inst;
  http_guard_cfg cfg;
  mhd_guard *guard;
};

static void on_closed(void *arg, mhd_guard_reason why) {
  http_guard *g = arg;
  char labels[48];
  snprintf(labels, sizeof labels, "reason=\"%s\"", mhd_guard_reason_code(why));
  g->host->metric(g->inst, CEB_METRIC_COUNTER, "http_connections_closed_total",
                  labels, 1);
}

static void describe(void *arg, mhd_guard_reason why, char *buf, size_t n) {
  const http_guard_cfg *c = &((http_guard *)arg)->cfg;
  switch (why) {
  case MHD_GUARD_HEAD_TIMEOUT:
    snprintf(buf, n,
             "request head not complete within request_head_timeout "
             "(%lld ms; connection_timeout %lld ms for a kept-alive "
             "connection)",
             (long long)c->head_ms, (long long)c->keepalive_ms);
    break;
  case MHD_GUARD_BODY_TIMEOUT:
    snprintf(buf, n,
             "request body not complete within request_body_timeout "
             "(%lld ms)",
             (long long)c->body_ms);
    break;
  case MHD_GUARD_BODY_RATE:
    snprintf(buf, n,
             "request body slower than request_body_min_rate "
             "(%llu bytes/s after %d ms)",
             (unsigned long long)c->min_rate, MHD_GUARD_RATE_GRACE_MS);
    break;
  case MHD_GUARD_EVICTED:
    snprintf(buf, n,
             "waiting longest for a request head while connections ran "
             "short (%u of max_connections %u are kept for new clients)",
             c->reserve, c->max_conn);
    break;
  default:
    snprintf(buf, n, "request body far over max_body (not read to its end)");
    break;
  }
}

/* The host's log escapes control characters. */
static void warn(void *arg, const char *line) {
  http_guard *g = arg;
  g->host->log(g->inst, CEB_LOG_WARN, "%s", line);
}

static void open_changed(void *arg, unsigned open) {
  http_guard *g = arg;
  g->host->metric(g->inst, CEB_METRIC_GAUGE, "http_connections_open", NULL,
                  (double)open);
}

http_guard *http_guard_new(const ceb_host *host, ceb_instance *inst,
                           const http_guard_cfg *cfg) {
  http_guard *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->host = host;
  g->inst = inst;
  g->cfg = *cfg;
  mhd_guard_cfg mc = {.head_ms = cfg->head_ms,
                      .keepalive_ms = cfg->keepalive_ms,
                      .body_ms = cfg->body_ms,
                      .min_rate = cfg->min_rate,
                      .sweep_ms = 250};
  mhd_guard_hooks h = {.arg = g,
                       .closed = on_closed,
                       .describe = describe,
                       .warn = warn,
                       .open_changed = open_changed};
  g->guard = mhd_guard_new(&mc, &h);
  if (!g->guard) {
    free(g);
    return NULL;
  }
  return g;
}

void http_guard_free(http_guard *g) {
  if (!g) return;
  mhd_guard_free(g->guard);
  free(g);
}

http_guard_conn *http_guard_opened(http_guard *g, struct MHD_Connection *conn) {
  return g ? mhd_guard_opened(g->guard, conn) : NULL;
}

void http_guard_closed(http_guard *g, http_guard_conn *rec) {
  if (g) mhd_guard_closed(g->guard, rec);
}

int http_guard_admit(http_guard *g, unsigned open) {
  if (!g || open + g->cfg.reserve < g->cfg.max_conn) return 0;
  return mhd_guard_evict(g->guard);
}

void http_guard_head_done(struct MHD_Connection *conn) {
  mhd_guard_head_done(conn);
}

void http_guard_body(struct MHD_Connection *conn, size_t n) {
  mhd_guard_body(conn, n);
}

int http_guard_busy(struct MHD_Connection *conn) {
  return mhd_guard_busy(conn);
}

void http_guard_request_done(struct MHD_Connection *conn) {
  mhd_guard_request_done(conn);
}

void http_guard_mhd_log(http_guard *g, const char *fmt, va_list ap) {
  if (g) mhd_guard_mhd_log(g->guard, fmt, ap);
}

void http_guard_note(http_guard *g, struct MHD_Connection *conn,
                     http_close_reason why) {
  if (g) mhd_guard_note(g->guard, conn, (mhd_guard_reason)why);
}
