/* The pull plugin: a sink that keeps delivered events in a durable queue
 * which consumers fetch over HTTP (Edukoppeling option B, "pull"):
 *
 *   GET  <prefix>/<queue>?cursor=N&max=M&wait=5s   long poll, a batch
 *   POST <prefix>/<queue>/commit?cursor=N          acknowledge up to N
 *
 * The queue lives in the host's store (ceb_host.queue_*, ABI 1.2), so
 * every bridge sharing the store serves the same queue: a consumer may
 * fetch and commit on any of them. A delivery is settled ACK once the event
 * is durable in the store, so the route's retry/DLQ machinery covers only
 * getting it there; the queue keeps it until a consumer commits past it.
 * Consumers authenticate like at the intermediary (OAuth2 bearer JWT, same
 * keys), or not at all on a loopback listener. With tls.cert/tls.key the
 * listener serves HTTPS under the same TLS policy as the intermediary
 * (http_tls.h). */
#include <arpa/inet.h>
#include <ceb/ceb.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_guard.h"
#include "http_jwks.h"
#include "http_jwt.h"
#include "http_tls.h"
#include "pull_import.h"

#define MS(x) ((int64_t)(x)*1000)
#define PULL_MAX_CONN 128u
/* slots kept for new consumers: slow or idle connections give way */
#define PULL_CONN_RESERVE 16u

static const ceb_config_spec pull_spec[] = {
    {"listen", CEB_CFG_ADDRESS, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Address consumers fetch from; port 0 picks a free port."},
    {"port_file", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "File the bound port is written to (useful with port 0)."},
    {"path_prefix", CEB_CFG_STRING, 0, "/v1/pull", 0, 0, NULL,
     "URL path before /<queue>; the queue name is the sink's name."},
    {"max_batch", CEB_CFG_INT, 0, "100", 1, 1000, NULL,
     "Most events one fetch returns."},
    {"max_wait", CEB_CFG_DURATION, 0, "30s", 0, MS(300), NULL,
     "Longest long poll a consumer may ask for with wait=."},
    {"queue.max", CEB_CFG_INT, 0, "100000", 1, 100000000, NULL,
     "Most uncommitted events kept; past it deliveries retry later "
     "(backpressure to the route)."},
    {"auth", CEB_CFG_ENUM, 0, "oauth2", 0, 0, "oauth2|none",
     "Consumer authentication; none is allowed on a loopback listener only."},
    CEB_TLS_LISTENER_FILES_SPEC(""),
    CEB_TLS_LISTENER_POLICY_SPEC(""),
    HTTP_OAUTH2_SPEC_ENTRIES CEB_CONFIG_SPEC_END};

typedef struct pull_state {
  const ceb_host *host;
  ceb_instance *inst;
  char *name;
  char *prefix;
  char host_addr[128];
  int port;
  char *port_file;
  size_t max_batch;
  int64_t max_wait_ms;
  size_t queue_max;
  struct MHD_Daemon *mhd;
  atomic_int draining;
  /* deliveries appended, not yet settled: destroy waits for them (their
   * callbacks hold s) */
  long inflight;
  pthread_mutex_t lock;
  pthread_cond_t settled;
  int sync_init;
  http_tls_listener tls; /* no cert: plain HTTP */
  http_guard *guard;     /* request deadlines and the slot reserve */
  atomic_uint open;      /* connections open */
  http_jwks *jwks;
  http_jwt_rules rules;
  const char *const *scopes;
} pull_state;

static int reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                 const char *body) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", ctype);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  if (status == 503) MHD_add_response_header(r, "Retry-After", "5");
  int rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

static int problem(struct MHD_Connection *c, unsigned status, const char *code,
                   const char *detail) {
  json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type",
                        "https://cebridge.dev/problems/pull", "title", code,
                        "status", (int)status, "code", code, "detail", detail);
  char *t = json_dumps(p, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(p);
  int rc = reply(c, status, "application/problem+json", t ? t : "{}");
  free(t);
  return rc;
}

static int reply_json(struct MHD_Connection *c, json_t *body) {
  char *t = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(body);
  if (!t) return problem(c, 500, "internal", "cannot render the response");
  int rc = reply(c, 200, "application/json", t);
  free(t);
  return rc;
}

static const char *qarg(struct MHD_Connection *c, const char *k) {
  const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
  return v && *v ? v : NULL;
}

/* 0 when allowed; else a problem was queued and *rc holds its result. */
static int authenticate(pull_state *s, struct MHD_Connection *c, int *rc) {
  if (!s->jwks) return 0;
  const char *h =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
    *rc = problem(c, 401, "unauthorized", "a bearer token is required");
    return -1;
  }
  http_jwt_result res;
  memset(&res, 0, sizeof res);
  if (http_jwt_verify(s->jwks, &s->rules, h + 7, s->host->now_ms(s->inst),
                      &res) != CEB_OK) {
    s->host->metric(s->inst, CEB_METRIC_COUNTER, "pull_auth_failures_total",
                    NULL, 1);
    *rc = problem(c, (unsigned)(res.http_status ? res.http_status : 401),
                  res.reason ? res.reason : "unauthorized", res.detail);
    return -1;
  }
  return 0;
}

/* queue_fetch's visit: the stored JSON format, parsed into the answer's
 * array (an event that no longer parses is skipped, as before: it was
 * written by the bridge, so this is damage, not input). */
static int add_event(void *arg, int64_t seq, const char *json, size_t len) {
  (void)seq;
  json_t *ev = json_loadb(json, len, 0, NULL);
  if (ev) json_array_append_new((json_t *)arg, ev);
  return 0;
}

static void depth_gauge(pull_state *s) {
  int64_t depth = 0;
  if (s->host->queue_stats(s->inst, &depth, NULL, NULL) == CEB_OK)
    s->host->metric(s->inst, CEB_METRIC_GAUGE, "pull_queue_depth", NULL,
                    (double)depth);
}

static int handle_fetch(pull_state *s, struct MHD_Connection *c) {
  int64_t cursor = 0, max = (int64_t)s->max_batch, wait = 0;
  const char *v;
  if ((v = qarg(c, "cursor")) &&
      (ceb_parse_int(v, &cursor) != CEB_OK || cursor < 0))
    return problem(c, 400, "bad_cursor", "cursor is a non-negative integer");
  if ((v = qarg(c, "max")) && (ceb_parse_int(v, &max) != CEB_OK || max < 1 ||
                               max > (int64_t)s->max_batch))
    return problem(c, 400, "bad_max", "max is 1 .. max_batch");
  if ((v = qarg(c, "wait")) &&
      (ceb_parse_duration_ms(v, &wait) != CEB_OK || wait > s->max_wait_ms))
    return problem(c, 400, "bad_wait", "wait is a duration up to max_wait");
  int64_t last = 0;
  json_t *events = json_array();
  if (!events) return problem(c, 500, "internal", "out of memory");
  int st = s->host->queue_fetch(s->inst, cursor, (size_t)max, wait, add_event,
                                events, &last);
  if (st != CEB_OK) {
    json_decref(events);
    return problem(c, 503, "store_unavailable",
                   "the queue cannot be read now; try again");
  }
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "pull_events_fetched_total",
                  NULL, (double)json_array_size(events));
  char cur[32];
  snprintf(cur, sizeof cur, "%lld", (long long)last);
  return reply_json(c, json_pack("{s:s, s:s, s:o}", "queue", s->name, "cursor",
                                 cur, "events", events));
}

static int handle_commit(pull_state *s, struct MHD_Connection *c) {
  int64_t cursor, committed = 0;
  const char *v = qarg(c, "cursor");
  if (!v || ceb_parse_int(v, &cursor) != CEB_OK || cursor < 0)
    return problem(c, 400, "bad_cursor",
                   "commit needs cursor=N from a previous fetch");
  int st = s->host->queue_commit(s->inst, cursor, &committed);
  if (st == CEB_EINVAL)
    return problem(c, 422, "cursor_beyond_end",
                   "the cursor is past the last event in the queue");
  if (st != CEB_OK)
    return problem(c, 503, "store_unavailable",
                   "the cursor cannot be committed now; try again");
  depth_gauge(s);
  char cur[32];
  snprintf(cur, sizeof cur, "%lld", (long long)committed);
  return reply_json(
      c, json_pack("{s:s, s:s}", "queue", s->name, "committed", cur));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  (void)version;
  (void)upload;
  pull_state *s = cls;
  if (!*con_cls) {
    *con_cls = (void *)1;
    http_guard_head_done(c);
    return MHD_YES;
  }
  if (*upload_size) { /* parameters are in the query; ignore any body */
    http_guard_body(c, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  /* handled from here (a long poll may wait max_wait): exempt from the
   * deadlines, unless the guard is already closing the connection */
  if (!http_guard_busy(c)) return MHD_NO;
  if (atomic_load(&s->draining))
    return (enum MHD_Result)problem(c, 503, "draining",
                                    "the bridge is shutting down");
  size_t plen = strlen(s->prefix), nlen = strlen(s->name);
  if (strncmp(url, s->prefix, plen) != 0 || url[plen] != '/' ||
      strncmp(url + plen + 1, s->name, nlen) != 0)
    return (enum MHD_Result)problem(c, 404, "unknown_queue", "no such queue");
  const char *rest = url + plen + 1 + nlen;
  if (s->tls.client_ca && !http_tls_peer_verified(c))
    return (enum MHD_Result)problem(c, 403, "tls.client_certificate",
                                    "a valid client certificate is required");
  int rc;
  if (authenticate(s, c, &rc) != 0) return (enum MHD_Result)rc;
  if (*rest == '\0') {
    if (strcmp(method, "GET") != 0)
      return (enum MHD_Result)problem(c, 405, "method_not_allowed",
                                      "fetch with GET");
    return (enum MHD_Result)handle_fetch(s, c);
  }
  if (strcmp(rest, "/commit") == 0) {
    if (strcmp(method, "POST") != 0)
      return (enum MHD_Result)problem(c, 405, "method_not_allowed",
                                      "commit with POST");
    return (enum MHD_Result)handle_commit(s, c);
  }
  return (enum MHD_Result)problem(c, 404, "not_found", "no such endpoint");
}

static void pull_mhd_log(void *cls, const char *fmt, va_list ap) {
  pull_state *s = cls;
  http_guard_mhd_log(s->guard, fmt, ap); /* started before the daemon */
}

/* Connection accounting for the guard (http_guard.h): slow and idle
 * connections must not hold the 128 slots (thread per connection). */
static enum MHD_Result pull_accept(void *cls, const struct sockaddr *addr,
                                   socklen_t len) {
  (void)addr;
  (void)len;
  pull_state *s = cls;
  unsigned open = atomic_load(&s->open);
  /* the guard closed a slow connection: this one takes its place */
  if (http_guard_admit(s->guard, open) &&
      open < PULL_MAX_CONN + PULL_CONN_RESERVE)
    return MHD_YES;
  return open < PULL_MAX_CONN ? MHD_YES : MHD_NO;
}

static void pull_conn(void *cls, struct MHD_Connection *c, void **socket_ctx,
                      enum MHD_ConnectionNotificationCode code) {
  pull_state *s = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    atomic_fetch_add(&s->open, 1);
    *socket_ctx = http_guard_opened(s->guard, c);
  } else {
    atomic_fetch_sub(&s->open, 1);
    http_guard_closed(s->guard, *socket_ctx);
  }
}

static void pull_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                           enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)con_cls;
  (void)toe;
  http_guard_request_done(c); /* the next head's deadline starts */
}

static void jwks_log(void *arg, int error, const char *msg) {
  pull_state *s = arg;
  s->host->log(s->inst, error ? CEB_LOG_WARN : CEB_LOG_INFO, "jwks: %s", msg);
}

static int is_loopback(const char *host) {
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
         strcmp(host, "localhost") == 0;
}

static void pull_destroy(void *state);

static int pull_init_state(const ceb_host *host, ceb_instance *inst,
                           const ceb_instance_info *info, const ceb_config *cfg,
                           void **state) {
  pull_state *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->host = host;
  s->inst = inst;
  s->name = strdup(info->name);
  s->prefix = strdup(ceb_config_str(cfg, "path_prefix"));
  const char *pf = ceb_config_str(cfg, "port_file");
  s->port_file = pf ? strdup(pf) : NULL;
  s->max_batch = (size_t)ceb_config_int(cfg, "max_batch", 100);
  s->max_wait_ms = ceb_config_duration_ms(cfg, "max_wait", 30000);
  s->queue_max = (size_t)ceb_config_int(cfg, "queue.max", 100000);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->settled, NULL);
  s->sync_init = 1;
  *state = s;
  if (!s->name || !s->prefix) return CEB_ENOMEM;
  if (!CEB_HOST_HAS(host, queue_append) || !CEB_HOST_HAS(host, queue_fetch) ||
      !CEB_HOST_HAS(host, queue_commit) || !CEB_HOST_HAS(host, queue_stats) ||
      !CEB_HOST_HAS(host, queue_wake)) {
    host->log(inst, CEB_LOG_ERROR,
              "this host has no queue services (ABI 1.2): the pull queue "
              "lives in the host's store");
    return CEB_EUNSUPPORTED;
  }
  if (ceb_parse_address(ceb_config_str(cfg, "listen"), s->host_addr,
                        sizeof s->host_addr, &s->port) != CEB_OK) {
    host->log(inst, CEB_LOG_ERROR, "listen is not host:port");
    return CEB_ECONFIG;
  }
  int st = http_tls_listener_load(host, inst, cfg, "", &s->tls);
  if (st != CEB_OK) return st;
  if (!s->tls.cert && !is_loopback(s->host_addr))
    host->log(inst, CEB_LOG_WARN,
              "serving plain HTTP on %s: consumers' tokens and events cross "
              "the network in clear; set tls.cert and tls.key or terminate "
              "TLS in front",
              s->host_addr);
  const char *auth = ceb_config_str(cfg, "auth");
  if (strcmp(auth, "none") == 0) {
    if (!is_loopback(s->host_addr)) {
      host->log(inst, CEB_LOG_ERROR,
                "auth = none is only allowed on a loopback listener (%s)",
                s->host_addr);
      return CEB_ECONFIG;
    }
    host->log(inst, CEB_LOG_WARN,
              "auth = none: consumers are not "
              "authenticated (loopback only)");
  } else {
    const char *url = ceb_config_str(cfg, "oauth2.jwks_url");
    const char *file = ceb_config_str(cfg, "oauth2.jwks_file");
    if (!url == !file) {
      host->log(inst, CEB_LOG_ERROR,
                "auth = oauth2 needs exactly one of oauth2.jwks_url and "
                "oauth2.jwks_file");
      return CEB_ECONFIG;
    }
    s->jwks = http_jwks_new(
        url, file,
        ceb_config_duration_ms(cfg, "oauth2.jwks_min_refresh", 30000),
        ceb_config_duration_ms(cfg, "oauth2.jwks_wait", 500), jwks_log, s);
    if (!s->jwks || http_jwks_set_tls(s->jwks, cfg, "oauth2.") != CEB_OK)
      return CEB_ENOMEM;
    s->rules.issuer = ceb_config_str(cfg, "oauth2.issuer");
    s->rules.audience = ceb_config_str(cfg, "oauth2.audience");
    s->rules.nscopes = ceb_config_list(cfg, "oauth2.scope", &s->scopes);
    s->rules.scopes = s->scopes;
    s->rules.leeway_ms = ceb_config_duration_ms(cfg, "oauth2.leeway", 60000);
    s->rules.client_claim = ceb_config_str(cfg, "oauth2.client_claim");
  }
  /* a queue file of an earlier version moves into the store first */
  return pull_import(host, inst, info->data_dir);
}

/* On failure the host calls nothing else: free what was built here. */
static int pull_init(const ceb_host *host, ceb_instance *inst,
                     const ceb_instance_info *info, const ceb_config *cfg,
                     void **state) {
  *state = NULL;
  int st = pull_init_state(host, inst, info, cfg, state);
  if (st != CEB_OK) {
    pull_destroy(*state);
    *state = NULL;
  }
  return st;
}

static int pull_start(void *state) {
  pull_state *s = state;
  struct sockaddr_in sa4 = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)s->port)};
  struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6,
                             .sin6_port = htons((uint16_t)s->port)};
  struct sockaddr *sa = (struct sockaddr *)&sa4;
  /* Long polls block their connection's thread: one thread per connection,
   * bounded by the connection limit. */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  const char *h =
      strcmp(s->host_addr, "localhost") == 0 ? "127.0.0.1" : s->host_addr;
  if (inet_pton(AF_INET, h, &sa4.sin_addr) != 1) {
    if (inet_pton(AF_INET6, h, &sa6.sin6_addr) != 1) {
      s->host->log(s->inst, CEB_LOG_ERROR, "listen host %s is not an IP",
                   s->host_addr);
      return CEB_ECONFIG;
    }
    sa = (struct sockaddr *)&sa6;
    flags |= MHD_USE_IPv6;
  }
  struct MHD_OptionItem tls[5];
  size_t n = 0;
  http_tls_listener_options(&s->tls, &flags, tls, &n);
  tls[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  unsigned idle_s = (unsigned)(s->max_wait_ms / 1000 + 30);
  http_guard_cfg gc = {MS(10), MS(idle_s),    MS(60),
                       1024,   PULL_MAX_CONN, PULL_CONN_RESERVE};
  s->guard = http_guard_new(s->host, s->inst, &gc);
  if (!s->guard) return CEB_ENOMEM;
  s->mhd = MHD_start_daemon(
      flags, 0, pull_accept, s, handle, s, MHD_OPTION_EXTERNAL_LOGGER,
      pull_mhd_log, s, MHD_OPTION_SOCK_ADDR, sa,
      /* a backstop above PULL_MAX_CONN: libmicrohttpd calls the accept
       * policy (where the guard frees slots) only under its own limit */
      MHD_OPTION_CONNECTION_LIMIT, PULL_MAX_CONN + PULL_CONN_RESERVE,
      MHD_OPTION_CONNECTION_TIMEOUT, idle_s, MHD_OPTION_NOTIFY_CONNECTION,
      pull_conn, s, MHD_OPTION_NOTIFY_COMPLETED, pull_completed, s,
      MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
  if (!s->mhd) {
    http_guard_free(s->guard);
    s->guard = NULL;
    s->host->log(s->inst, CEB_LOG_ERROR, "cannot listen on %s:%d", s->host_addr,
                 s->port);
    return CEB_EIO;
  }
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
  if (di) s->port = di->port;
  s->host->log(s->inst, CEB_LOG_INFO, "pull queue '%s' on %s://%s:%d%s/%s",
               s->name, s->tls.cert ? "https" : "http", s->host_addr, s->port,
               s->prefix, s->name);
  if (s->port_file) {
    FILE *f = fopen(s->port_file, "w");
    if (f) {
      fprintf(f, "%d\n", s->port);
      fclose(f);
    }
  }
  return CEB_OK;
}

typedef struct pull_append {
  pull_state *s;
  ceb_delivery *d;
} pull_append;

/* The host's store took the event (or not): settle the delivery. A host
 * thread; must not block. */
static void on_appended(void *arg, int status) {
  pull_append *a = arg;
  pull_state *s = a->s;
  ceb_settle_info info = {sizeof info, CEB_ACK, -1, 0, NULL, NULL, 0};
  if (status == CEB_EBUSY) {
    /* full: the route backs off, nothing is dropped */
    info = (ceb_settle_info){sizeof info,
                             CEB_RETRY,
                             1000,
                             0,
                             "pull.queue_full",
                             "the pull queue is full: consumers are behind",
                             0};
  } else if (status != CEB_OK) {
    info.outcome = CEB_RETRY;
    info.reason = "pull.store";
    info.detail = "the pull queue could not store the event";
  }
  s->host->settle(s->inst, a->d, &info);
  free(a);
  pthread_mutex_lock(&s->lock);
  if (--s->inflight == 0) pthread_cond_broadcast(&s->settled);
  pthread_mutex_unlock(&s->lock);
}

static int pull_deliver(void *state, ceb_delivery *d) {
  pull_state *s = state;
  char *json = NULL; /* our own encoding, when the host gave none */
  size_t len;
  /* the queue keeps the JSON format: the journal's bytes as they are */
  const char *text = ceb_delivery_encoded(d, &len);
  if (!text) {
    if (ceb_json_encode(d->event, &json, &len) != CEB_OK) return CEB_ENOMEM;
    text = json;
  }
  pull_append *a = malloc(sizeof *a);
  if (!a) {
    ceb_free(json);
    return CEB_ENOMEM;
  }
  a->s = s;
  a->d = d;
  pthread_mutex_lock(&s->lock);
  s->inflight++;
  pthread_mutex_unlock(&s->lock);
  int st = s->host->queue_append(s->inst, d->idempotency_key, text, len,
                                 s->queue_max, on_appended, a);
  ceb_free(json);
  if (st == CEB_OK) return CEB_OK;
  free(a);
  pthread_mutex_lock(&s->lock);
  if (--s->inflight == 0) pthread_cond_broadcast(&s->settled);
  pthread_mutex_unlock(&s->lock);
  return st; /* a RETRY with the status (CEB_EBUSY: the host defers it) */
}

static int pull_drain(void *state, int64_t deadline_ms) {
  pull_state *s = state;
  atomic_store(&s->draining, 1);
  s->host->queue_wake(s->inst); /* long polls return */
  if (s->mhd) {
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
  }
  http_guard_free(s->guard); /* after the daemon: no connection is left */
  s->guard = NULL;
  (void)deadline_ms; /* appends under way settle when the store commits */
  return CEB_OK;
}

static void pull_destroy(void *state) {
  pull_state *s = state;
  if (!s) return;
  if (s->mhd) MHD_stop_daemon(s->mhd);
  http_guard_free(s->guard);
  if (s->sync_init) {
    /* appends under way call back into s: wait for them (the store
     * commits or fails each one; it never drops a callback) */
    pthread_mutex_lock(&s->lock);
    while (s->inflight > 0)
      pthread_cond_wait(&s->settled, &s->lock);
    pthread_mutex_unlock(&s->lock);
    pthread_cond_destroy(&s->settled);
    pthread_mutex_destroy(&s->lock);
  }
  http_jwks_free(s->jwks);
  http_tls_listener_free(&s->tls);
  free(s->name);
  free(s->prefix);
  free(s->port_file);
  free(s);
}

static const ceb_plugin pull_plugin = {
    .struct_size = sizeof(ceb_plugin),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .name = "pull",
    .version = "0.1.0",
    .description = "Pull queue: consumers fetch events over HTTP and commit "
                   "a cursor (Edukoppeling option B).",
    .roles = CEB_ROLE_SINK,
    .config_sink = pull_spec,
    .init = pull_init,
    .start = pull_start,
    .drain = pull_drain,
    .destroy = pull_destroy,
    .deliver = pull_deliver,
};

CEB_PLUGIN_DEFINE(pull_plugin)
