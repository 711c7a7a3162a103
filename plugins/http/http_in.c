/* The intermediary's lifecycle: config, listeners, drain. */
#include "http_in_int.h"

#include "http_in_head.h"
#include "http_in_listen.h"
#include "http_in_publish.h"
#include "http_in_util.h"
#include "http_tls.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#define RATELIMIT_MAX_CLIENTS 4096

#define LOG(s, lvl, ...) CEB_LOG((s)->host, (s)->inst, lvl, __VA_ARGS__)

static void jwks_log(void *arg, int error, const char *msg) {
  http_source *s = arg;
  LOG(s, error ? CEB_LOG_ERROR : CEB_LOG_WARN, "oauth2: %s", msg);
}

/* Through the guard, which limits libmicrohttpd's per-connection lines
 * (http_guard_mhd_log); the guard exists before any daemon runs. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  http_source *s = cls;
  if (s->guard) {
    http_guard_mhd_log(s->guard, fmt, ap);
    return;
  }
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  LOG(s, CEB_LOG_WARN, "libmicrohttpd: %s", msg);
}

static int is_loopback(const char *host) {
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
         strcasecmp(host, "localhost") == 0;
}

typedef struct clients_ctx {
  http_source *s;
  int st;
} clients_ctx;

static int add_client(const char *key, const char *value, void *arg) {
  clients_ctx *c = arg;
  http_source *s = c->s;
  const char *name = key + strlen("clients.");
  size_t n = strlen(name);
  static const char cb_suffix[] = ".callback";
  if (n > sizeof cb_suffix - 1 &&
      strcmp(name + n - (sizeof cb_suffix - 1), cb_suffix) == 0) {
    c->st = http_in_callback_default(s, key, name, n - (sizeof cb_suffix - 1),
                                     value);
    return c->st != CEB_OK;
  }
  static const char suffix[] = ".types";
  if (n <= sizeof suffix - 1 ||
      strcmp(name + n - (sizeof suffix - 1), suffix) != 0) {
    LOG(s, CEB_LOG_ERROR,
        "%s (%s): expected clients.<client>.types = <type patterns> or "
        "clients.<client>.callback = <URL>",
        key, ceb_config_origin(s->cfg, key));
    c->st = CEB_ECONFIG;
    return 1;
  }
  http_client_types *nc =
      realloc(s->clients, (s->nclients + 1) * sizeof *s->clients);
  if (!nc) {
    c->st = CEB_ENOMEM;
    return 1;
  }
  s->clients = nc;
  nc[s->nclients].client = strndup(name, n - (sizeof suffix - 1));
  nc[s->nclients].patterns = value;
  if (!nc[s->nclients].client) {
    c->st = CEB_ENOMEM;
    return 1;
  }
  s->nclients++;
  return 0;
}

static int init_oauth2(http_source *s) {
  const ceb_config *cfg = s->cfg;
  const char *url = ceb_config_str(cfg, "oauth2.jwks_url");
  const char *file = ceb_config_str(cfg, "oauth2.jwks_file");
  if (!url == !file) {
    LOG(s, CEB_LOG_ERROR,
        "auth = oauth2 needs exactly one of oauth2.jwks_url and "
        "oauth2.jwks_file");
    return CEB_ECONFIG;
  }
  s->rules.audience = ceb_config_str(cfg, "oauth2.audience");
  if (!s->rules.audience) {
    LOG(s, CEB_LOG_ERROR,
        "auth = oauth2 needs oauth2.audience (tokens "
        "for other services must not be accepted)");
    return CEB_ECONFIG;
  }
  s->rules.issuer = ceb_config_str(cfg, "oauth2.issuer");
  if (!s->rules.issuer)
    LOG(s, CEB_LOG_WARN,
        "oauth2.issuer is not set: any issuer whose key "
        "is in the JWKS is trusted");
  s->rules.nscopes = ceb_config_list(cfg, "oauth2.scope", &s->rules.scopes);
  s->rules.leeway_ms = ceb_config_duration_ms(cfg, "oauth2.leeway", 60000);
  s->rules.client_claim = ceb_config_str(cfg, "oauth2.client_claim");
  s->jwks = http_jwks_new(
      url, file, ceb_config_duration_ms(cfg, "oauth2.jwks_min_refresh", 30000),
      ceb_config_duration_ms(cfg, "oauth2.jwks_wait", 500), jwks_log, s);
  if (!s->jwks || http_jwks_set_tls(s->jwks, cfg, "oauth2.") != CEB_OK)
    return CEB_ENOMEM;
  /* A file must be usable now; a URL is fetched at start (no network in
   * init) and again on the first unknown kid. */
  if (file && http_jwks_refresh(s->jwks, s->host->now_ms(s->inst)) != CEB_OK) {
    LOG(s, CEB_LOG_ERROR, "oauth2.jwks_file %s (%s) holds no usable key", file,
        ceb_config_origin(cfg, "oauth2.jwks_file"));
    return CEB_ECONFIG;
  }
  return CEB_OK;
}

static int init_webhook(http_source *s) {
  const char *const *secrets = NULL;
  size_t n = ceb_config_list(s->cfg, "webhook.secrets", &secrets);
  s->norigins = ceb_config_list(s->cfg, "webhook.allowed_origins", &s->origins);
  if (n == 0) return CEB_OK;
  char why[256];
  int st = http_webhook_keys_config(secrets, n, &s->wh_keys, why, sizeof why);
  if (st == CEB_ECONFIG) LOG(s, CEB_LOG_ERROR, "%s", why);
  if (st != CEB_OK) return st;
  s->wh_tolerance_ms =
      ceb_config_duration_ms(s->cfg, "webhook.tolerance", 300000);
  s->wh_replay = http_replay_new(
      (size_t)ceb_config_int(s->cfg, "webhook.replay_cache", 100000),
      s->wh_tolerance_ms * 2);
  return s->wh_replay ? CEB_OK : CEB_ENOMEM;
}

static int init_config(http_source *s) {
  const ceb_config *cfg = s->cfg;
  const char *listen = ceb_config_str(cfg, "listen");
  if (!listen ||
      ceb_parse_address(listen, s->listen_host, sizeof s->listen_host,
                        &s->listen_port) != CEB_OK) {
    LOG(s, CEB_LOG_ERROR, "listen: invalid address %s", listen ? listen : "");
    return CEB_ECONFIG;
  }
  s->loopback = is_loopback(s->listen_host);
  s->path = ceb_config_str(cfg, "path");
  if (!s->path || s->path[0] != '/') {
    LOG(s, CEB_LOG_ERROR, "path must start with /");
    return CEB_ECONFIG;
  }
  s->port_file = ceb_config_str(cfg, "port_file");
  s->threads = (unsigned)ceb_config_int(cfg, "threads", 2);
  s->max_body = (size_t)ceb_config_size(cfg, "max_body", 1024 * 1024);
  s->max_conn = (unsigned)ceb_config_int(cfg, "max_connections", 1024);
  s->max_conn_per_ip =
      (unsigned)ceb_config_int(cfg, "max_connections_per_ip", 64);
  int64_t to = ceb_config_duration_ms(cfg, "connection_timeout", 30000);
  s->conn_timeout_s = (unsigned)((to + 999) / 1000);
  http_guard_cfg *gc = &s->guard_cfg;
  gc->head_ms = ceb_config_duration_ms(cfg, "request_head_timeout", 10000);
  gc->keepalive_ms = to;
  gc->body_ms = ceb_config_duration_ms(cfg, "request_body_timeout", 60000);
  gc->min_rate = (uint64_t)ceb_config_size(cfg, "request_body_min_rate", 1024);
  gc->max_conn = s->max_conn;
  gc->reserve = (unsigned)ceb_config_int(cfg, "connection_reserve", 64);
  if (gc->reserve > s->max_conn / 2) gc->reserve = s->max_conn / 2;
  s->conn_memory = (size_t)ceb_config_size(cfg, "connection_memory", 32768);
  s->retry_after_s =
      (int)((ceb_config_duration_ms(cfg, "retry_after", 5000) + 999) / 1000);
  s->head_layout = http_in_head_layout_known();
  if (!s->head_layout)
    LOG(s, CEB_LOG_WARN,
        "libmicrohttpd %s: NUL bytes and folded lines in request headers are "
        "not detected (checked with 0.9.75 only)",
        MHD_get_version());

  int st;
  if ((st = http_tls_listener_load(s->host, s->inst, cfg, "", &s->tls)) !=
      CEB_OK)
    return st;
  if (!s->tls.cert && !s->loopback)
    LOG(s, CEB_LOG_WARN,
        "serving plain HTTP on %s: terminate TLS in front "
        "or set tls.cert and tls.key",
        listen);

  const char *auth = ceb_config_str(cfg, "auth");
  s->auth_oauth2 = !auth || strcmp(auth, "none") != 0;
  if (!s->auth_oauth2) {
    if (!s->loopback) {
      LOG(s, CEB_LOG_ERROR,
          "auth = none is only allowed on a loopback "
          "listen address, not %s",
          listen);
      return CEB_ECONFIG;
    }
    LOG(s, CEB_LOG_WARN, "auth = none: requests are not authenticated");
  } else if ((st = init_oauth2(s)) != CEB_OK) {
    return st;
  }

  clients_ctx cc = {s, CEB_OK};
  ceb_config_foreach(cfg, "clients.", add_client, &cc);
  if (cc.st != CEB_OK) return cc.st;
  if ((st = http_in_callback_allow_init(s)) != CEB_OK) return st;
  if (s->ncb_defaults > 0 && !s->auth_oauth2) {
    LOG(s, CEB_LOG_ERROR,
        "clients.<client>.callback needs auth = oauth2 (the client is the "
        "token's identity)");
    return CEB_ECONFIG;
  }
  if (s->nclients > 0 && !s->auth_oauth2) {
    LOG(s, CEB_LOG_ERROR,
        "clients.<client>.types needs auth = oauth2 (the "
        "client is the token's identity)");
    return CEB_ECONFIG;
  }

  const char *idem = ceb_config_str(cfg, "idempotency");
  s->idem = !idem || strcmp(idem, "optional") == 0 ? HTTP_IDEM_OPTIONAL
            : strcmp(idem, "required") == 0        ? HTTP_IDEM_REQUIRED
                                                   : HTTP_IDEM_OFF;
  if (ceb_config_str(cfg, "rate_limit")) {
    s->rate = ceb_config_rate(cfg, "rate_limit", 0);
    int64_t burst = ceb_config_int(cfg, "rate_limit.burst", 0);
    if (s->rate <= 0) {
      LOG(s, CEB_LOG_ERROR, "rate_limit must be positive");
      return CEB_ECONFIG;
    }
    s->ratelimit = http_ratelimit_new(
        s->rate, burst > 0 ? (double)burst : (s->rate < 1 ? 1 : s->rate),
        RATELIMIT_MAX_CLIENTS);
    if (!s->ratelimit) return CEB_ENOMEM;
  }
  if ((st = http_in_publish_init(s)) != CEB_OK) return st;
  return init_webhook(s);
}

int http_source_init(const ceb_host *host, ceb_instance *inst,
                     const ceb_instance_info *info, const ceb_config *cfg,
                     void **state) {
  http_source *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->host = host;
  s->inst = inst;
  s->cfg = cfg;
  s->name = strdup(info && info->name ? info->name : "http");
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  atomic_init(&s->draining, 0);
  int st = s->name ? init_config(s) : CEB_ENOMEM;
  s->mapped = ceb_instance_mapped(info);
  if (st == CEB_OK && s->mapped && !CEB_HOST_HAS(host, submit_mapped)) {
    LOG(s, CEB_LOG_ERROR, "map: this host cannot run mappings");
    st = CEB_ECONFIG;
  }
  if (st == CEB_OK && s->mapped && s->nclients > 0) {
    /* the program makes the events inside the host: their types are not
     * known here to check against each client's list */
    char key[300];
    snprintf(key, sizeof key, "clients.%s.types", s->clients[0].client);
    LOG(s, CEB_LOG_ERROR,
        "%s (%s): per-client types cannot be checked on a source with map "
        "(the program makes the events); restrict types with the route's "
        "match.type instead",
        key, ceb_config_origin(s->cfg, key));
    st = CEB_ECONFIG;
  }
  if (st != CEB_OK) {
    http_source_destroy(s);
    return st;
  }
  *state = s;
  return CEB_OK;
}

static int resolve(http_source *s, struct sockaddr_storage *ss, int *v6) {
  struct addrinfo hints = {0}, *res = NULL;
  char port[16];
  snprintf(port, sizeof port, "%d", s->listen_port);
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int rc = getaddrinfo(s->listen_host, port, &hints, &res);
  if (rc != 0 || !res) {
    LOG(s, CEB_LOG_ERROR, "listen: cannot resolve %s: %s", s->listen_host,
        gai_strerror(rc));
    return CEB_ECONFIG;
  }
  memcpy(ss, res->ai_addr, res->ai_addrlen);
  *v6 = res->ai_family == AF_INET6;
  freeaddrinfo(res);
  return CEB_OK;
}

int http_source_start(void *state) {
  http_source *s = state;
  if (s->jwks && ceb_config_str(s->cfg, "oauth2.jwks_url") &&
      http_jwks_refresh(s->jwks, s->host->now_ms(s->inst)) != CEB_OK)
    LOG(s, CEB_LOG_WARN, "JWKS not loaded yet; retried on the first token");
  struct sockaddr_storage ss;
  int v6 = 0;
  int st = resolve(s, &ss, &v6);
  if (st != CEB_OK) return st;
  /* poll(), not epoll: libmicrohttpd's epoll loop (0.9.75 up to 1.0.1)
   * takes at most 128 events per epoll_wait and, having got 128, waits
   * again with the timeout it computed before handling any of them. When
   * the inter-thread signal of a resume (a 202 made durable) was among
   * those 128 and nothing else arrives, that second wait sleeps until the
   * next connection timeout with every resumed request unanswered: the
   * stall of issue 16 (D6) under 256 connections, forced by
   * test_http_in_resume. Its poll loop checks for resumed connections
   * before every wait and polls the signal with the sockets. */
  unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ERROR_LOG;
  if (v6) flags |= MHD_USE_IPv6;
  struct MHD_OptionItem opts[16];
  size_t n = 0;
#define OPT(o, v, p)                                                           \
  opts[n++] = (struct MHD_OptionItem){(o), (intptr_t)(v), (p)}
  OPT(MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s); /* first: MHD wants it so */
  /* above max_connections, so that the accept policy (which libmicrohttpd
   * calls only under its own limit) still runs at it and the guard frees a
   * slot */
  OPT(MHD_OPTION_CONNECTION_LIMIT, s->max_conn + s->guard_cfg.reserve + 1,
      NULL);
  OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->max_conn_per_ip, NULL);
  OPT(MHD_OPTION_CONNECTION_TIMEOUT, s->conn_timeout_s, NULL);
  OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->conn_memory, NULL);
  OPT(MHD_OPTION_NOTIFY_COMPLETED, http_source_completed, s);
  OPT(MHD_OPTION_UNESCAPE_CALLBACK, http_source_unescape, s);
  http_tls_listener_options(&s->tls, &flags, opts, &n);
  OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
  st = http_listen_start(s, &ss, flags, opts);
  if (st != CEB_OK) return st;
  LOG(s, CEB_LOG_INFO, "listening on %s%s%s:%d%s (%s, %u thread(s))",
      v6 ? "[" : "", s->listen_host, v6 ? "]" : "", s->bound_port, s->path,
      s->tls.cert ? (s->tls.client_ca ? "https, client certificates" : "https")
                  : "http",
      s->ndaemons);
  if (s->port_file) {
    char text[16];
    snprintf(text, sizeof text, "%d\n", s->bound_port);
    if (http_file_write(s->port_file, text) != CEB_OK) {
      LOG(s, CEB_LOG_ERROR, "cannot write port_file %s", s->port_file);
      http_listen_stop(s);
      return CEB_EIO;
    }
  }
  return CEB_OK;
}

int http_source_drain(void *state, int64_t deadline_ms) {
  http_source *s = state;
  atomic_store(&s->draining, 1);
  pthread_mutex_lock(&s->lock);
  while (s->pending > 0 && s->host->now_ms(s->inst) < deadline_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->cond, &s->lock, &ts);
  }
  size_t left = s->pending;
  pthread_mutex_unlock(&s->lock);
  if (left)
    LOG(s, CEB_LOG_WARN,
        "drain deadline passed with %zu request(s) waiting "
        "for durability",
        left);
  if (s->ndaemons) {
    http_source_resume_all(s);
    http_listen_stop(s);
  }
  return left ? CEB_ETIMEOUT : CEB_OK;
}

void http_source_destroy(void *state) {
  http_source *s = state;
  if (!s) return;
  if (s->ndaemons) http_source_resume_all(s);
  http_listen_stop(s);
  http_jwks_free(s->jwks);
  http_ratelimit_free(s->ratelimit);
  http_webhook_keys_free(s->wh_keys);
  http_replay_free(s->wh_replay);
  http_in_publish_free(s);
  for (size_t i = 0; i < s->nclients; i++)
    free(s->clients[i].client);
  free(s->clients);
  for (size_t i = 0; i < s->ncb_defaults; i++)
    free(s->cb_defaults[i].client);
  free(s->cb_defaults);
  http_in_callback_allow_free(s);
  http_tls_listener_free(&s->tls);
  free(s->name);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
