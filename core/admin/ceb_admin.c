/* Admin API server: routing, auth, responses. Endpoint bodies are in
 * ceb_admin_v1.c. */
#include "admin/ceb_admin.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/ceb_admin_conns.h"
#include "admin/ceb_admin_guard.h"
#include "admin/ceb_admin_internal.h"
#include "admin/ceb_admin_tls.h"
#include "admin/ceb_admin_token.h"
#include "admin/ceb_admin_ui.h"
#include "log/ceb_log.h"
#include "runtime/ceb_runtime.h"
#include "store/ceb_store.h"

struct ceb_admin {
  struct MHD_Daemon *mhd;
  ceb_admin_view view; /* the bridge's, copied */
  char *token;         /* configured or from the token file; never NULL */
  /* Host / Origin names of this listener: known once the port is bound,
   * after MHD's thread runs; until then every guarded call is refused. */
  _Atomic(ceb_admin_guard *) guard;
  atomic_int ready;
  int port;
  ceb_admin_tls tls;      /* no cert: plain HTTP */
  ceb_admin_conns *conns; /* deadlines and eviction (ceb_admin_conns.h) */
};

/* Connection slots (a thread each). A new connection past them closes the
 * one waiting longest for its request head (ceb_admin_conns_admit);
 * libmicrohttpd's own limit is higher by ADMIN_CONN_SPARE, for the
 * connections closed that way whose threads have not cleaned up yet. */
#define ADMIN_CONN_MAX 64u
#define ADMIN_CONN_SPARE 16u
/* libmicrohttpd's idle timeout (s), and the deadline of the next request
 * head on a kept-alive connection (its clock starts at the answer). */
#define ADMIN_IDLE_TIMEOUT_S 30u

void ceb_admin_headers(struct MHD_Response *r) {
  MHD_add_response_header(r, "Content-Security-Policy", CEB_ADMIN_CSP);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(r, "X-Frame-Options", "DENY");
}

int ceb_admin_reply(struct MHD_Connection *c, int status,
                    const char *content_type, const char *body, size_t len) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  ceb_admin_headers(r);
  MHD_add_response_header(r, "Content-Type", content_type);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  if (status == MHD_HTTP_UNAUTHORIZED)
    MHD_add_response_header(r, "WWW-Authenticate",
                            "Bearer realm=\"cebridge-admin\"");
  int rc = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return rc;
}

int ceb_admin_reply_json(struct MHD_Connection *c, int status, json_t *body) {
  char *text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(body);
  if (!text) return ceb_admin_problem(c, 500, "internal", "cannot render JSON");
  int rc = ceb_admin_reply(c, status, "application/json", text, strlen(text));
  free(text);
  return rc;
}

int ceb_admin_problem(struct MHD_Connection *c, int status, const char *code,
                      const char *detail) {
  json_t *p =
      json_pack("{s:s, s:s, s:i, s:s, s:s}", "type",
                "https://cebridge.dev/problems/admin", "title", code, "status",
                status, "code", code, "detail", detail ? detail : "");
  char *text = p ? json_dumps(p, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(p);
  int rc = ceb_admin_reply(c, status, "application/problem+json",
                           text ? text : "{}", text ? strlen(text) : 2);
  free(text);
  return rc;
}

/* Seconds a client waits before asking again while the store is away: the
 * PostgreSQL pool's first reconnect backoff and SQLite's write probe are
 * well under it. */
#define ADMIN_STORE_RETRY_AFTER "5"

int ceb_admin_store_problem(struct MHD_Connection *c, struct ceb_store *st,
                            const char *what) {
  char why[300] = "";
  if (!st || ceb_store_writable(st, why, sizeof why))
    return ceb_admin_problem(c, 500, "store_error", what);
  char detail[640];
  snprintf(detail, sizeof detail, "%s: the store is unavailable (%s)", what,
           why[0] ? why : "no reason given");
  json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type",
                        "https://cebridge.dev/problems/admin", "title",
                        "store_unavailable", "status", 503, "code",
                        "store_unavailable", "detail", detail);
  char *text = p ? json_dumps(p, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(p);
  struct MHD_Response *r = MHD_create_response_from_buffer(
      text ? strlen(text) : 2, text ? text : "{}", MHD_RESPMEM_MUST_COPY);
  free(text);
  if (!r) return MHD_NO;
  ceb_admin_headers(r);
  MHD_add_response_header(r, "Content-Type", "application/problem+json");
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "Retry-After", ADMIN_STORE_RETRY_AFTER);
  int rc = MHD_queue_response(c, 503, r);
  MHD_destroy_response(r);
  return rc;
}

/* Probes and scrapers (kubelet, Prometheus) send neither a token nor a
 * Host we could know in advance (a pod IP, a service name): these three
 * read-only endpoints skip the Host and token checks. They reveal no event
 * data. */
static int open_endpoint(const char *url, int get) {
  return get && (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0 ||
                 strcmp(url, "/metrics") == 0);
}

/* Origin on every request (no probe sends one, every cross-site browser
 * request does); then, except for the open endpoints, Host (DNS
 * rebinding) and the bearer token. Returns MHD_YES/NO when it answered, -1
 * to go on. */
static int guard(ceb_admin *a, struct MHD_Connection *c, const char *url,
                 int get) {
  const ceb_admin_guard *g = atomic_load(&a->guard);
  const char *origin =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
  if (origin && !ceb_admin_guard_origin_ok(g, origin))
    return ceb_admin_problem(c, 403, "foreign_origin",
                             "the request comes from another origin (a web "
                             "page): the admin API refuses cross-site calls");
  if (open_endpoint(url, get)) return -1;
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
  if (!ceb_admin_guard_host_ok(g, host))
    return ceb_admin_problem(c, 403, "foreign_host",
                             "the Host header does not name this admin API "
                             "(add the name to admin.allowed_hosts)");
  /* The console's files hold no data (it all comes from /v1/ with the
   * token the operator types in): served without a token. */
  if (get && ceb_admin_ui_path(url)) return -1;
  const char *auth =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (!ceb_admin_bearer_ok(a->token, auth))
    return ceb_admin_problem(c, 401, "unauthorized",
                             "missing or wrong admin bearer token (admin.token,"
                             " or the admin.token file beside the store)");
  return -1;
}

/* MHD_OPTION_UNESCAPE_CALLBACK: libmicrohttpd's percent-decoding, except
 * that a value decoding to a NUL becomes "\x01", refused below
 * (libmicrohttpd keeps C strings: "/ui/app.js%00.html" was read as
 * "/ui/app.js"). The intermediary has the same hook; core cannot include a
 * plugin's code, hence this copy of four lines. MHD's threads. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls;
  (void)c;
  size_t n = MHD_http_unescape(s);
  if (strlen(s) == n) return n;
  s[0] = '\x01'; /* n >= 1: "%00" took 3 bytes */
  s[1] = '\0';
  return 1;
}

/* No control character (a decoded NUL included) in the request path. */
static int target_ok(const char *url) {
  for (const unsigned char *p = (const unsigned char *)url; *p; p++)
    if (*p < 0x20 || *p == 0x7f) return 0;
  return 1;
}

/* The admin API takes no request bodies (every parameter is in the
 * query); a client may still send a small one (curl -d ''). Past this the
 * request is refused from its head (Content-Length) or cut off (chunked),
 * never read: a body is not a way to hold one of the 64 connections. */
#define ADMIN_BODY_MAX (64u * 1024u)

/* The first call, with the complete head: every refusal that needs no
 * body is answered here, before libmicrohttpd reads one (an answer queued
 * now closes the connection after it). Returns MHD_YES/NO when it
 * answered, -1 to go on. */
static int head_checks(ceb_admin *a, struct MHD_Connection *c, const char *url,
                       int get) {
  if (!target_ok(url))
    return ceb_admin_problem(
        c, 400, "url.invalid",
        "the request path holds a control character or an encoded NUL");
  int refused = guard(a, c, url, get);
  if (refused >= 0) return refused;
  const char *cl =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  char *end = NULL;
  if (cl && (strtoull(cl, &end, 10) > ADMIN_BODY_MAX || end == cl || *end))
    return ceb_admin_problem(c, 413, "body.unsupported",
                             "the admin API takes no request body: "
                             "parameters go in the query");
  return -1;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_size, void **con_cls) {
  (void)version;
  (void)upload_data;
  ceb_admin *a = cls;
  int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  /* *con_cls counts the body bytes drained so far, plus one */
  if (*con_cls == NULL) {
    ceb_admin_conns_head_done(c); /* the body's deadline starts */
    *con_cls = (void *)(uintptr_t)1;
    int refused = head_checks(a, c, url, get);
    if (refused >= 0 && !ceb_admin_conns_busy(c)) return MHD_NO;
    if (refused >= 0) return (enum MHD_Result)refused;
    return MHD_YES;
  }
  if (*upload_size) {
    uintptr_t seen = (uintptr_t)*con_cls - 1 + *upload_size;
    *upload_size = 0;
    /* libmicrohttpd cannot queue an answer in the middle of a body */
    if (seen > ADMIN_BODY_MAX) return MHD_NO;
    *con_cls = (void *)(seen + 1);
    return MHD_YES;
  }
  /* the request is complete: answered, never cut off by the guard */
  if (!ceb_admin_conns_busy(c)) return MHD_NO;
  if (strcmp(url, "/healthz") == 0 && get)
    return (enum MHD_Result)ceb_admin_reply(c, 200, "application/json",
                                            "{\"status\":\"ok\"}", 15);
  if (strcmp(url, "/readyz") == 0 && get) {
    int ready =
        atomic_load(&a->ready) && a->view.rt && ceb_runtime_ready(a->view.rt);
    return (enum MHD_Result)(
        ready ? ceb_admin_reply(c, 200, "application/json",
                                "{\"status\":\"ready\"}", 18)
              : ceb_admin_problem(c, 503, "not_ready", "draining or starting"));
  }
  if (strcmp(url, "/metrics") == 0 && get)
    return (enum MHD_Result)ceb_admin_metrics(&a->view, c);
  if (get && ceb_admin_ui_path(url))
    return (enum MHD_Result)ceb_admin_ui(c, url);
  if (strncmp(url, "/v1/", 4) == 0)
    return (enum MHD_Result)ceb_admin_v1(&a->view, c, method, url + 3);
  return (enum MHD_Result)ceb_admin_problem(c, 404, "not_found",
                                            "no such admin endpoint");
}

/* MHD_OPTION_NOTIFY_CONNECTION: the guard's record of each connection, as
 * its socket context. MHD's threads. */
static void on_connection(void *cls, struct MHD_Connection *c,
                          void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
  ceb_admin *a = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED)
    *socket_ctx = ceb_admin_conns_opened(a->conns, c);
  else
    ceb_admin_conns_closed(a->conns, *socket_ctx);
}

/* MHD_OPTION_NOTIFY_COMPLETED: the answer went out (or the request ended):
 * the next request head's deadline starts. The connection's thread. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)con_cls;
  (void)toe;
  ceb_admin_conns_done(c);
}

/* MHD_OPTION_ACCEPT_POLICY_CALLBACK: at ADMIN_CONN_MAX, a new connection
 * is taken only in the place of one the guard evicts. Listening thread. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr,
                                 socklen_t addrlen) {
  (void)addr;
  (void)addrlen;
  ceb_admin *a = cls;
  return ceb_admin_conns_admit(a->conns) ? MHD_YES : MHD_NO;
}

int ceb_admin_start(const ceb_admin_view *view, ceb_admin **out, char *err,
                    size_t errlen) {
  *out = NULL;
  const ceb_bridge_cfg *cfg = ceb_conf_bridge_cfg(view->conf);
  const char *listen = cfg->admin.listen;
  if (!listen || !*listen || strcmp(listen, "off") == 0) return CEB_OK;
  char host[256];
  int port;
  if (ceb_parse_address(listen, host, sizeof host, &port) != CEB_OK) {
    snprintf(err, errlen, "admin.listen '%s' is not host:port", listen);
    return CEB_ECONFIG;
  }
  struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6,
                             .sin6_port = htons((uint16_t)port)};
  struct sockaddr_in sa4 = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
  struct sockaddr *sa;
  /* A thread per connection (at most ADMIN_CONN_MAX): a call
   * waiting on the store (a slow or locked query, a long replay) holds its
   * own connection only; with one thread for all, /healthz and /readyz
   * waited behind it and a liveness probe would restart the bridge. */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
                   MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO |
                   MHD_USE_ERROR_LOG;
  if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host,
                &sa4.sin_addr) == 1) {
    sa = (struct sockaddr *)&sa4;
  } else if (inet_pton(AF_INET6, host, &sa6.sin6_addr) == 1) {
    sa = (struct sockaddr *)&sa6;
    flags |= MHD_USE_IPv6;
  } else {
    snprintf(err, errlen, "admin.listen host '%s' must be an IP address", host);
    return CEB_ECONFIG;
  }
  ceb_admin *a = calloc(1, sizeof *a);
  if (!a) return CEB_ENOMEM;
  a->view = *view;
  const char *source = NULL;
  int st = ceb_admin_token_get(cfg, 1, &a->token, &source, err, errlen);
  if (st != CEB_OK) {
    free(a);
    return st;
  }
  st = ceb_admin_tls_load(cfg, &a->tls, err, errlen);
  if (st != CEB_OK) {
    OPENSSL_cleanse(a->token, strlen(a->token));
    free(a->token);
    free(a);
    return st;
  }
  struct MHD_OptionItem tls[4] = {{MHD_OPTION_END, 0, NULL}};
  if (a->tls.cert) {
    flags |= MHD_USE_TLS;
    tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, a->tls.cert};
    tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, a->tls.key};
    /* without it GnuTLS's NORMAL applies: TLS 1.0 and static RSA */
    tls[2] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                     a->tls.priority};
    tls[3] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  }
  atomic_store(&a->ready, 1);
  ceb_admin_conns_cfg gc = {.head_ms = cfg->admin.request_head_timeout_ms,
                            .keepalive_ms =
                                (int64_t)ADMIN_IDLE_TIMEOUT_S * 1000,
                            .body_ms = cfg->admin.request_body_timeout_ms,
                            .max_conn = ADMIN_CONN_MAX};
  a->conns = ceb_admin_conns_new(view->metrics, &gc);
  if (a->conns)
    a->mhd = MHD_start_daemon(
        flags, 0, on_accept, a, handle, a,
        /* first: the options' own errors are logged by it too */
        MHD_OPTION_EXTERNAL_LOGGER, ceb_admin_conns_mhd_log, a->conns,
        MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, a,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, a,
        MHD_OPTION_CONNECTION_TIMEOUT, ADMIN_IDLE_TIMEOUT_S,
        MHD_OPTION_CONNECTION_LIMIT, ADMIN_CONN_MAX + ADMIN_CONN_SPARE,
        MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
  if (!a->mhd) {
    ceb_admin_conns_free(a->conns);
    snprintf(err, errlen, "admin API cannot listen on %s (in use?%s)", listen,
             a->tls.cert ? ", or admin.tls.cert / admin.tls.key unusable" : "");
    ceb_admin_tls_free(&a->tls);
    OPENSSL_cleanse(a->token, strlen(a->token));
    free(a->token);
    free(a);
    return CEB_EIO;
  }
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(a->mhd, MHD_DAEMON_INFO_BIND_PORT);
  a->port = di ? di->port : port;
  ceb_admin_guard *g =
      ceb_admin_guard_new(host, a->port, cfg->admin.allowed_hosts.items,
                          cfg->admin.allowed_hosts.count);
  atomic_store(&a->guard, g);
  if (!g) {
    ceb_admin_stop(a);
    return CEB_ENOMEM;
  }
  ceb_log_info("admin API listening on %s://%s:%d",
               a->tls.cert ? "https" : "http", host, a->port);
  if (strcmp(source, "config") == 0) {
    ceb_log_info("admin API token: admin.token");
  } else {
    char path[4096];
    ceb_admin_token_path(cfg, path, sizeof path);
    ceb_log_info("admin API token: %s %s (mode 0600)",
                 strcmp(source, "generated") == 0 ? "generated into"
                                                  : "read from",
                 path);
  }
  const char *port_file = cfg->admin.port_file;
  if (port_file && *port_file) {
    FILE *f = fopen(port_file, "w");
    if (f) {
      fprintf(f, "%d\n", a->port);
      fclose(f);
    } else {
      ceb_log_warn("cannot write admin.port_file %s", port_file);
    }
  }
  *out = a;
  return CEB_OK;
}

void ceb_admin_set_ready(ceb_admin *a, int ready) {
  if (a) atomic_store(&a->ready, ready);
}

int ceb_admin_port(const ceb_admin *a) {
  return a ? a->port : 0;
}

void ceb_admin_stop(ceb_admin *a) {
  if (!a) return;
  MHD_stop_daemon(a->mhd);
  ceb_admin_conns_free(a->conns); /* after the daemon: no connection left */
  ceb_admin_guard_free(atomic_load(&a->guard));
  if (a->token) OPENSSL_cleanse(a->token, strlen(a->token));
  free(a->token);
  ceb_admin_tls_free(&a->tls);
  free(a);
}
