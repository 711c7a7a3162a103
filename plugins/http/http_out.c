/* Webhook sink: config, lifecycle and deliver(). The transfers run on the
 * instance's loop thread (http_out_loop.c). */
#include "http_out_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

const ceb_config_spec http_sink_spec[] = {
    {"url", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Webhook endpoint (https); ${attr} inserts an event attribute, "
     "percent-encoded."},
    {"mode", CEB_CFG_ENUM, 0, "binary", 0, 0, "binary|structured|batch",
     "CloudEvents HTTP content mode; batch posts "
     "application/cloudevents-batch+json."},
    {"batch.max", CEB_CFG_INT, 0, "100", 1, 10000, NULL,
     "Most events in one batch request. A route to this sink needs "
     "max_inflight >= batch.max to fill one: left unset, it is raised to "
     "2 x batch.max; set lower, check warns."},
    {"batch.wait", CEB_CFG_DURATION, 0, "200ms", 0, 60000, NULL,
     "Longest wait for a batch to fill before it is sent."},
    {"max_connections", CEB_CFG_INT, 0, "8", 1, 1024, NULL,
     "Concurrent requests (kept-alive connections) to the endpoint."},
    {"max_pending", CEB_CFG_INT, 0, "10000", 1, 10000000, NULL,
     "Deliveries held before deliver() answers busy."},
    {"timeout", CEB_CFG_DURATION, 0, "15s", 100, 600000, NULL,
     "Per-attempt timeout (never past the delivery's deadline)."},
    {"response_excerpt", CEB_CFG_SIZE, 0, "1KiB", 0, 65536, NULL,
     "Bytes of the endpoint's response body kept with a delivery that "
     "succeeded, for the client's job status (GET /v1/events/{id} of the "
     "http source); 0 keeps none."},
    {"allow_insecure_http", CEB_CFG_BOOL, 0, "false", 0, 0, NULL,
     "Allow plain http:// URLs (loopback tests only)."},
    {"callback_urls", CEB_CFG_BOOL, 0, "false", 0, 0, NULL,
     "This sink sends the clients' callbacks of a route with callbacks = "
     "true: each goes to the URL the client gave (X-Callback; https, or "
     "http to a loopback address, checked again before sending) instead of "
     "url, with a circuit per URL. url stays the destination of anything "
     "else routed here."},
    {"callback_private_networks", CEB_CFG_BOOL, 0, "false", 0, 0, NULL,
     "With callback_urls: callbacks may also reach addresses of private "
     "networks (10/8, 172.16/12, 192.168/16, 100.64/10, 198.18/15, "
     "fc00::/7, fec0::/10, 64:ff9b:1::/48). Whatever this says, a callback "
     "never connects to a link-local (169.254/16, fe80::/10) or other "
     "metadata service address (100.100.100.200, fd00:ec2::254), multicast, "
     "unspecified or reserved address, nor to a loopback address unless "
     "its URL names a loopback host; checked on the address connected to, "
     "after name resolution."},
    {"callback_proxy", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "With callback_urls: every callback goes out through this proxy "
     "(http://host:port) and the bridge checks no callback address itself "
     "(it connects only to the proxy, which resolves the client's host): "
     "the proxy must refuse link-local, private-network and loopback "
     "destinations. Unset, callbacks go direct and are checked; they never "
     "use a proxy from the environment (http_proxy, https_proxy, "
     "ALL_PROXY, no_proxy)."},
    {"tls.ca_file", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "CA bundle for the endpoint's certificate (default: system store)."},
    {"tls.client_cert", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "Client certificate (PEM) for mutual TLS."},
    {"tls.client_key", CEB_CFG_PATH, CEB_CFG_SECRET, NULL, 0, 0, NULL,
     "Private key (PEM) of the client certificate."},
    CEB_TLS_CLIENT_POLICY_SPEC(""),
    {"user_agent", CEB_CFG_STRING, 0, "cebridge-webhook/1", 0, 0, NULL,
     "User-Agent header."},
    {"headers.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL,
     "headers.<name> = value adds a static request header (names are "
     "case-insensitive)."},
    {"handshake", CEB_CFG_BOOL, 0, "false", 0, 0, NULL,
     "Validate the endpoint with a CloudEvents webhook OPTIONS handshake "
     "before the first delivery. Not with callback_urls (a config error: "
     "one handshake cannot stand for every client's callback URL)."},
    {"handshake.origin", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "WebHook-Request-Origin sent in the handshake (default: host name)."},
    {"webhook.secrets", CEB_CFG_LIST, CEB_CFG_SECRET, NULL, 0, 0, NULL,
     "Standard Webhooks secrets (whsec_...); every one signs, for rotation."},
    HTTP_OAUTH_CLIENT_SPEC,
    CEB_CONFIG_SPEC_END};

/* Headers the sink writes itself; a static header may not override them. */
static const char *const k_reserved[] = {
    "content-type",      "content-length",    "host",
    "authorization",     "idempotency-key",   "webhook-id",
    "webhook-timestamp", "webhook-signature", "expect",
    "transfer-encoding", "user-agent",        NULL};

typedef struct init_ctx {
  http_sink *s;
  int rc;
} init_ctx;

static int token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

int http_sink_header_own(const http_sink *s, const char *name) {
  for (size_t i = 0; k_reserved[i]; i++)
    if (strcasecmp(name, k_reserved[i]) == 0) return 1;
  size_t n = strlen(name);
  for (const struct curl_slist *h = s->static_headers; h; h = h->next)
    if (strncasecmp(h->data, name, n) == 0 && h->data[n] == ':') return 1;
  return strncasecmp(name, "ce-", 3) == 0 ||
         strcasecmp(name, "connection") == 0;
}

int http_sink_header_name_ok(const char *name) {
  int ok = *name != '\0';
  for (const char *p = name; *p; p++)
    ok = ok && token_char(*p);
  return ok;
}

static int add_static_header(const char *key, const char *value, void *arg) {
  init_ctx *ctx = arg;
  http_sink *s = ctx->s;
  const char *name = key + strlen("headers.");
  int ok = *name != '\0';
  for (const char *p = name; *p; p++)
    ok = ok && token_char(*p);
  for (const unsigned char *v = (const unsigned char *)value; *v; v++)
    ok = ok && (*v >= 0x20 || *v == '\t') && *v != 0x7f;
  for (size_t i = 0; ok && k_reserved[i]; i++)
    ok = strcasecmp(name, k_reserved[i]) != 0;
  if (ok && strncasecmp(name, "ce-", 3) == 0) ok = 0;
  if (!ok) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "%s: not a valid header name/value, or a header the sink sets "
            "itself",
            key);
    ctx->rc = CEB_ECONFIG;
    return 1;
  }
  char line[4096];
  if ((size_t)snprintf(line, sizeof(line), "%s: %s", name, value) >=
      sizeof(line)) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "%s: value too long", key);
    ctx->rc = CEB_ECONFIG;
    return 1;
  }
  struct curl_slist *nl = curl_slist_append(s->static_headers, line);
  if (!nl) {
    ctx->rc = CEB_ENOMEM;
    return 1;
  }
  s->static_headers = nl;
  return 0;
}

/* https only, unless allowed; the scheme must be literal (not templated). */
static int check_url(http_sink *s, const char *key, const char *url,
                     int allow_templates) {
  int templated = 0;
  if (http_sink_url_check(url, &templated) != CEB_OK ||
      (templated && !allow_templates)) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "%s: malformed ${attribute} placeholder", key);
    return CEB_ECONFIG;
  }
  int https = strncasecmp(url, "https://", 8) == 0;
  int http = strncasecmp(url, "http://", 7) == 0;
  if (!https && !(http && s->allow_insecure)) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "%s: must be an https:// URL%s",
            key,
            http ? " (allow_insecure_http = true permits http:// for "
                   "loopback tests)"
                 : "");
    return CEB_ECONFIG;
  }
  /* Parse a sample expansion so that a broken URL fails now, not per event. */
  char *sample = strdup(url);
  if (!sample) return CEB_ENOMEM;
  for (char *p = sample; (p = strstr(p, "${"));) {
    char *q = strchr(p, '}');
    memset(p, 'x', (size_t)(q - p + 1));
  }
  CURLU *u = curl_url();
  char *host = NULL;
  int bad = !u || curl_url_set(u, CURLUPART_URL, sample, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK;
  curl_free(host);
  curl_url_cleanup(u);
  free(sample);
  if (bad) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "%s: not a valid URL", key);
    return CEB_ECONFIG;
  }
  if (templated) s->url_templated = 1;
  return CEB_OK;
}

static int check_file(http_sink *s, const char *key, const char *path) {
  if (path && access(path, R_OK) != 0) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "%s: cannot read %s", key, path);
    return CEB_ECONFIG;
  }
  return CEB_OK;
}

/* The callback keys that only make sense together (file:line of the key
 * in the message). */
static int check_callbacks(http_sink *s, const ceb_config *cfg) {
  /* The handshake is made once per sink, with the first queued request's
   * URL, and opens the gate for everything after it: with callback_urls
   * that URL may be a client's (an OPTIONS request the callback address
   * checks never saw) and every other client's URL would go unasked.
   * Refused rather than guarded: no single handshake can stand for the
   * clients' endpoints. */
  if (s->handshake && s->callback_urls) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "handshake (%s): not with callback_urls = true (one handshake "
            "per sink cannot stand for every client's callback URL); send "
            "callbacks through a sink of their own",
            ceb_config_origin(cfg, "handshake"));
    return CEB_ECONFIG;
  }
  if (s->callback_proxy && !s->callback_urls) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "callback_proxy (%s): only for a sink with callback_urls = true",
            ceb_config_origin(cfg, "callback_proxy"));
    return CEB_ECONFIG;
  }
  if (s->callback_proxy) {
    CURLU *u = curl_url();
    char *host = NULL;
    int bad = !u ||
              curl_url_set(u, CURLUPART_URL, s->callback_proxy,
                           CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) !=
                  CURLUE_OK ||
              curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK;
    curl_free(host);
    curl_url_cleanup(u);
    if (bad) {
      CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
              "callback_proxy (%s): not a proxy URL (http://host:port)",
              ceb_config_origin(cfg, "callback_proxy"));
      return CEB_ECONFIG;
    }
  }
  return CEB_OK;
}

static char *dup_cfg(const ceb_config *cfg, const char *key, int *oom) {
  const char *v = ceb_config_str(cfg, key);
  if (!v || !*v) return NULL;
  char *d = strdup(v);
  if (!d) *oom = 1;
  return d;
}

static int setup_auth(http_sink *s, const ceb_config *cfg) {
  const char *const *secrets = NULL;
  size_t n = ceb_config_list(cfg, "webhook.secrets", &secrets);
  if (n) {
    char why[256];
    int rc = http_webhook_keys_config(secrets, n, &s->keys, why, sizeof why);
    if (rc == CEB_ECONFIG) CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "%s", why);
    if (rc != CEB_OK) return rc;
  }
  http_oauth_config oc;
  char err[160] = "";
  int rc = http_oauth_config_read(cfg, &oc, err, sizeof err);
  if (rc <= 0) {
    if (rc < 0) CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "%s", err);
    return rc < 0 ? CEB_ECONFIG : CEB_OK;
  }
  rc = check_url(s, "oauth2.token_url", oc.token_url, 0);
  if (rc != CEB_OK) return rc;
  rc = http_oauth_client_new(&oc, &s->oauth, err, sizeof(err));
  if (rc != CEB_OK) CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "%s", err);
  return rc;
}

static int setup(http_sink *s, const ceb_config *cfg) {
  int oom = 0;
  s->allow_insecure = ceb_config_bool(cfg, "allow_insecure_http", 0);
  s->callback_urls = ceb_config_bool(cfg, "callback_urls", 0);
  s->callback_private = ceb_config_bool(cfg, "callback_private_networks", 0);
  const char *mode = ceb_config_str(cfg, "mode");
  s->mode = !mode || strcmp(mode, "binary") == 0 ? CEB_MODE_BINARY
            : strcmp(mode, "structured") == 0    ? CEB_MODE_STRUCTURED
                                                 : CEB_MODE_BATCH;
  s->batch_max = ceb_config_int(cfg, "batch.max", 100);
  s->batch_wait_ms = ceb_config_duration_ms(cfg, "batch.wait", 200);
  s->max_connections = ceb_config_int(cfg, "max_connections", 8);
  s->max_pending = ceb_config_int(cfg, "max_pending", 10000);
  s->timeout_ms = ceb_config_duration_ms(cfg, "timeout", 15000);
  s->excerpt_max = (size_t)ceb_config_size(cfg, "response_excerpt", 1024);
  s->handshake = ceb_config_bool(cfg, "handshake", 0);
  /* the sink-common key the host's token bucket enforces: a receiver's
   * announced rate only lowers it (http_out_pace.h) */
  s->rate_limit = ceb_config_rate(cfg, "rate_limit", 0);
  if (s->batch_max < 1 || s->max_connections < 1 || s->max_pending < 1 ||
      s->timeout_ms < 1 || s->batch_wait_ms < 0) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "a size or duration is out of "
            "range");
    return CEB_ECONFIG;
  }
  const char *url = ceb_config_str(cfg, "url");
  if (!url || !*url) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "url is required");
    return CEB_ECONFIG;
  }
  int rc = check_url(s, "url", url, 1);
  if (rc != CEB_OK) return rc;
  if (s->url_templated && s->mode == CEB_MODE_BATCH) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "url: ${attribute} placeholders need mode binary or structured "
            "(a batch has one URL)");
    return CEB_ECONFIG;
  }
  s->url = dup_cfg(cfg, "url", &oom);
  /* the webhook and the OAuth2 token endpoint share these */
  oom = oom || http_tls_client_load(&s->tls, cfg, "") != CEB_OK;
  s->user_agent = dup_cfg(cfg, "user_agent", &oom);
  s->origin = dup_cfg(cfg, "handshake.origin", &oom);
  s->callback_proxy = dup_cfg(cfg, "callback_proxy", &oom);
  if (!s->origin && !oom) {
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) != 0 || !*host)
      snprintf(host, sizeof(host), "localhost");
    s->origin = strdup(host);
    oom = !s->origin;
  }
  if (oom) return CEB_ENOMEM;
  if ((rc = check_callbacks(s, cfg)) != CEB_OK) return rc;
  if ((rc = check_file(s, "tls.ca_file", s->tls.ca_file)) != CEB_OK ||
      (rc = check_file(s, "tls.client_cert", s->tls.client_cert)) != CEB_OK ||
      (rc = check_file(s, "tls.client_key", s->tls.client_key)) != CEB_OK)
    return rc;
  if (!!s->tls.client_cert != !!s->tls.client_key) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "tls.client_cert and tls.client_key go together");
    return CEB_ECONFIG;
  }
  init_ctx ctx = {s, CEB_OK};
  ceb_config_foreach(cfg, "headers.", add_static_header, &ctx);
  if (ctx.rc != CEB_OK) return ctx.rc;
  if ((rc = setup_auth(s, cfg)) != CEB_OK) return rc;

  s->batch = calloc(s->mode == CEB_MODE_BATCH ? (size_t)s->batch_max : 1,
                    sizeof(*s->batch));
  s->idle = calloc((size_t)s->max_connections + 2, sizeof(*s->idle));
  s->multi = curl_multi_init();
  if (!s->batch || !s->idle || !s->multi) return CEB_ENOMEM;
  if (s->url_templated || s->callback_urls) {
    /* the host's circuit keys (the sink section's circuit.*) per
     * destination */
    s->dests =
        http_dest_new((uint32_t)ceb_config_int(cfg, "circuit.failures", 5),
                      ceb_config_duration_ms(cfg, "circuit.open_for", 30000));
    if (!s->dests) return CEB_ENOMEM;
  }
  curl_multi_setopt(s->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                    (long)s->max_connections + 1);
  curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS,
                    (long)s->max_connections + 1);
  return CEB_OK;
}

static void sink_free(http_sink *s) {
  for (size_t i = 0; i < s->nidle; i++)
    curl_easy_cleanup(s->idle[i]);
  if (s->multi) curl_multi_cleanup(s->multi);
  http_dest_free(s->dests);
  free(s->idle);
  free(s->batch);
  curl_slist_free_all(s->static_headers);
  http_oauth_client_free(s->oauth);
  http_pace_free(&s->pace);
  http_webhook_keys_free(s->keys);
  free(s->url);
  http_tls_client_free(&s->tls);
  free(s->user_agent);
  free(s->origin);
  free(s->callback_proxy);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
  curl_global_cleanup();
}

int http_sink_init(const ceb_host *host, ceb_instance *inst,
                   const ceb_instance_info *info, const ceb_config *cfg,
                   void **state) {
  if (!host || !cfg || !state) return CEB_EINVAL;
  *state = NULL;
  /* Thread-safe and reference counted since curl 7.84. */
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return CEB_EINTERNAL;
  http_sink *s = calloc(1, sizeof(*s));
  if (!s) {
    curl_global_cleanup();
    return CEB_ENOMEM;
  }
  s->host = host;
  s->inst = inst;
  pthread_mutex_init(&s->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cond, &ca);
  pthread_condattr_destroy(&ca);
  int rc = setup(s, cfg);
  if (rc == CEB_OK && ceb_instance_mapped(info) && s->mode == CEB_MODE_BATCH) {
    /* a mapped delivery is one body of the program's own shape */
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "map: mode = batch cannot carry mapped bodies (one body per "
            "request); use mode = structured");
    rc = CEB_ECONFIG;
  }
  if (rc != CEB_OK) {
    if (rc == CEB_ENOMEM) CEB_LOG(host, inst, CEB_LOG_ERROR, "out of memory");
    sink_free(s);
    return rc;
  }
  *state = s;
  return CEB_OK;
}

int http_sink_start(void *state) {
  http_sink *s = state;
  if (!s) return CEB_EINVAL;
  if (s->thread_started) return CEB_OK;
  if (pthread_create(&s->thread, NULL, http_sink_loop, s) != 0) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "cannot start the loop thread");
    return CEB_EINTERNAL;
  }
  pthread_setname_np(s->thread, "http-sink");
  s->thread_started = 1;
  return CEB_OK;
}

int http_sink_deliver(void *state, ceb_delivery *d) {
  http_sink *s = state;
  if (!s || !d || !d->event) return CEB_EINVAL;
  http_item *it = malloc(sizeof(*it));
  if (!it) return CEB_ENOMEM;
  it->next = NULL;
  it->d = d;
  pthread_mutex_lock(&s->lock);
  int rc = s->draining                                ? CEB_ESHUTDOWN
           : s->outstanding >= (size_t)s->max_pending ? CEB_EBUSY
                                                      : CEB_OK;
  if (rc == CEB_OK) {
    if (s->q_tail)
      s->q_tail->next = it;
    else
      s->q_head = it;
    s->q_tail = it;
    s->outstanding++;
  }
  pthread_mutex_unlock(&s->lock);
  if (rc != CEB_OK) {
    free(it);
    return rc;
  }
  curl_multi_wakeup(s->multi);
  return CEB_OK;
}

static void deadline_after(struct timespec *ts, int64_t ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (ms % 1000) * 1000000;
  if (ts->tv_nsec >= 1000000000) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000;
  }
}

int http_sink_drain(void *state, int64_t deadline_ms) {
  http_sink *s = state;
  if (!s) return CEB_EINVAL;
  pthread_mutex_lock(&s->lock);
  s->draining = 1;
  pthread_mutex_unlock(&s->lock);
  if (!s->thread_started) {
    /* Never started: nothing can be sent; hand everything back. */
    size_t before = s->outstanding;
    http_sink_abort_all(s);
    return before ? CEB_ETIMEOUT : CEB_OK;
  }
  curl_multi_wakeup(s->multi);
  /* The host clock may be injected: convert the budget to real time once. */
  int64_t budget = deadline_ms - s->host->now_ms(s->inst);
  struct timespec until;
  deadline_after(&until, budget > 0 ? budget : 0);
  int rc = CEB_OK;
  pthread_mutex_lock(&s->lock);
  while (s->outstanding > 0) {
    if (pthread_cond_timedwait(&s->cond, &s->lock, &until) != 0 &&
        s->outstanding > 0) {
      rc = CEB_ETIMEOUT;
      break;
    }
  }
  if (rc == CEB_ETIMEOUT) {
    s->abort_all = 1;
    pthread_mutex_unlock(&s->lock);
    curl_multi_wakeup(s->multi);
    pthread_mutex_lock(&s->lock);
    while (s->outstanding > 0)
      pthread_cond_wait(&s->cond, &s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

void http_sink_destroy(void *state) {
  http_sink *s = state;
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  s->draining = 1;
  s->abort_all = 1;
  s->stopping = 1;
  pthread_mutex_unlock(&s->lock);
  if (s->thread_started) {
    curl_multi_wakeup(s->multi);
    pthread_join(s->thread, NULL);
  }
  http_sink_abort_all(s);
  sink_free(s);
}
