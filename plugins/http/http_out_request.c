/* Building webhook requests: URL templates, encoding, headers, signatures,
 * and the easy-handle setup for every kind of exchange. Loop thread. */
#include "http_out_int.h"

#include "http_callback.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <openssl/evp.h>

int64_t http_sink_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void http_sink_metric_delivery(http_sink *s, const ceb_settle_info *info,
                               size_t count) {
  static const char *names[] = {"ack", "retry", "reject"};
  char labels[96];
  snprintf(labels, sizeof(labels), "outcome=\"%s\",code=\"%d\"",
           names[info->outcome <= CEB_REJECT ? info->outcome : 1],
           info->status_code);
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "http_sink_deliveries_total",
                  labels, (double)count);
}

void http_sink_settle(http_sink *s, ceb_delivery *d,
                      const ceb_settle_info *info) {
  if (s->dests) {
    /* The sink keeps the circuit of each destination: no outcome of one
     * institution's endpoint may open the host's circuit of the whole sink
     * (a 410 opens that destination's circuit, http_out_loop.c). */
    ceb_settle_info own = *info;
    own.flags = (own.flags & ~CEB_SETTLE_OPEN_CIRCUIT) | CEB_SETTLE_DESTINATION;
    s->host->settle(s->inst, d, &own);
  } else {
    s->host->settle(s->inst, d, info);
  }
  pthread_mutex_lock(&s->lock);
  s->outstanding--;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

void http_sink_settle_req(http_sink *s, http_req *r, ceb_outcome outcome,
                          int status, const char *reason, const char *detail,
                          int64_t retry_after_ms, unsigned flags) {
  ceb_settle_info info = {sizeof(info), outcome, retry_after_ms, status,
                          reason,       detail,  flags};
  if (outcome == CEB_ACK && r->resp_len && s->excerpt_max) {
    /* what the endpoint answered, for the client's job status */
    info.body = r->resp;
    info.body_len = r->resp_len < s->excerpt_max ? r->resp_len : s->excerpt_max;
  }
  if (r->nd) http_sink_metric_delivery(s, &info, r->nd);
  for (size_t i = 0; i < r->nd; i++)
    http_sink_settle(s, r->ds[i], &info);
  r->nd = 0;
}

/* ---- URL templates: ${attr}, value percent-encoded ---- */

static int attr_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

int http_sink_url_check(const char *tmpl, int *templated) {
  *templated = 0;
  for (const char *p = tmpl; *p; p++) {
    if (p[0] != '$' || p[1] != '{') continue;
    const char *q = p + 2;
    while (attr_name_char(*q))
      q++;
    if (*q != '}' || q == p + 2 || q - p - 2 > CEB_ATTR_NAME_MAX)
      return CEB_EINVAL;
    *templated = 1;
    p = q;
  }
  return CEB_OK;
}

int http_sink_url_expand(const char *tmpl, const ceb_event *ev, char **out) {
  static const char hex[] = "0123456789ABCDEF";
  size_t cap = strlen(tmpl) + 1, len = 0;
  char *buf = malloc(cap);
  if (!buf) return CEB_ENOMEM;
  for (const char *p = tmpl; *p;) {
    const char *piece = p;
    size_t piece_len = 1;
    char name[CEB_ATTR_NAME_MAX + 1];
    const char *value = NULL;
    if (p[0] == '$' && p[1] == '{') {
      const char *q = strchr(p, '}');
      size_t n = (size_t)(q - p - 2);
      memcpy(name, p + 2, n);
      name[n] = '\0';
      value = ceb_event_get(ev, name);
      if (!value) {
        free(buf);
        return CEB_ENOTFOUND;
      }
      p = q + 1;
    } else {
      p++;
    }
    size_t need = value ? strlen(value) * 3 : piece_len;
    if (len + need + 1 > cap) {
      cap = (len + need + 1) * 2;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        return CEB_ENOMEM;
      }
      buf = nb;
    }
    if (!value) {
      buf[len++] = *piece;
      continue;
    }
    for (const unsigned char *v = (const unsigned char *)value; *v; v++) {
      if (isalnum(*v) || *v == '-' || *v == '.' || *v == '_' || *v == '~') {
        buf[len++] = (char)*v;
      } else {
        buf[len++] = '%';
        buf[len++] = hex[*v >> 4];
        buf[len++] = hex[*v & 15];
      }
    }
  }
  buf[len] = '\0';
  *out = buf;
  return CEB_OK;
}

/* ---- request construction ---- */

static int header_safe(const char *v) {
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    if (*p < 0x20 || *p == 0x7f) return 0;
  return *v != '\0';
}

/* "sha256_<hex>" of text: a header-safe stable id. */
static char *hashed_id(const char *prefix, const char *text, size_t len) {
  unsigned char md[32];
  unsigned int mdlen = 0;
  if (!EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL)) return NULL;
  size_t plen = strlen(prefix);
  char *out = malloc(plen + 2 * mdlen + 1);
  if (!out) return NULL;
  memcpy(out, prefix, plen);
  for (unsigned i = 0; i < mdlen; i++)
    snprintf(out + plen + 2 * i, 3, "%02x", md[i]);
  return out;
}

static char *single_msg_id(const ceb_delivery *d) {
  const char *key = d->idempotency_key;
  if (!key || !*key) key = ceb_event_get(d->event, "id");
  if (!key) return NULL;
  if (header_safe(key) && strlen(key) <= 512) return strdup(key);
  return hashed_id("sha256_", key, strlen(key));
}

/* Structured mode from the journal's bytes (ceb_delivery_encoded, ABI 1.1):
 * the body ceb_http_encode would write, without encoding the event again. */
static int structured_body(const char *json, size_t len, http_req *r) {
  static const char ct[] = "application/cloudevents+json";
  r->body = malloc(len + 1);
  if (!r->body) return CEB_ENOMEM;
  memcpy(r->body, json, len);
  r->body[len] = '\0';
  r->body_len = len;
  return ceb_headers_add(&r->headers, "Content-Type", ct, sizeof ct - 1);
}

/* An egress mapping's result (ABI 1.2) as the request: its body and
 * content type, and its headers but those the sink sends itself (its own
 * win: Idempotency-Key and the webhook-* signature stay the delivery's,
 * computed over this body). CEB_OK, CEB_ENOMEM, or CEB_EINVAL with *bad
 * naming a header that cannot be sent. */
static int mapped_body(http_sink *s, const ceb_mapped_out *mo, http_req *r,
                       const char **bad) {
  r->body = malloc(mo->body_len + 1);
  if (!r->body) return CEB_ENOMEM;
  memcpy(r->body, mo->body, mo->body_len);
  r->body[mo->body_len] = '\0';
  r->body_len = mo->body_len;
  int rc = ceb_headers_add(&r->headers, "Content-Type", mo->content_type,
                           strlen(mo->content_type));
  for (size_t i = 0; rc == CEB_OK && i < mo->nheaders; i++) {
    const ceb_mapped_header *h = &mo->headers[i];
    int ok = http_sink_header_name_ok(h->name);
    for (const unsigned char *v = (const unsigned char *)h->value; ok && *v;
         v++)
      ok = (*v >= 0x20 || *v == '\t') && *v != 0x7f; /* "" is a value */
    if (!ok) {
      *bad = h->name;
      return CEB_EINVAL;
    }
    if (http_sink_header_own(s, h->name)) continue;
    rc = ceb_headers_add(&r->headers, h->name, h->value, strlen(h->value));
  }
  return rc;
}

/* A batch's id derives from its members' keys: the same batch sent again
 * (a retry, a 401 refresh) carries the same key, any other batch another.
 * Shaped as a UUID version 4 like the members' own keys (engine_core.c):
 * receivers following the Idempotency-Key annex (our intermediary among
 * them, http_idem_key_parse) accept nothing else. */
static char *batch_msg_id(ceb_delivery **ds, size_t n) {
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  unsigned char h[EVP_MAX_MD_SIZE];
  unsigned int hl = 0;
  int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL);
  for (size_t i = 0; ok && i < n; i++) {
    const char *k = ds[i]->idempotency_key ? ds[i]->idempotency_key : "";
    /* NUL-terminated: no two key lists hash alike */
    ok = EVP_DigestUpdate(md, k, strlen(k) + 1);
  }
  ok = ok && EVP_DigestFinal_ex(md, h, &hl) && hl >= 16;
  EVP_MD_CTX_free(md);
  if (!ok) return NULL;
  h[6] = (unsigned char)((h[6] & 0x0f) | 0x40); /* version 4 */
  h[8] = (unsigned char)((h[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  char *out = malloc(37);
  if (!out) return NULL;
  size_t o = 0;
  for (unsigned i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
    snprintf(out + o, 3, "%02x", h[i]);
    o += 2;
  }
  out[o] = '\0';
  return out;
}

static void reject_all(http_sink *s, ceb_delivery **ds, size_t n,
                       const char *reason, const char *detail) {
  ceb_settle_info info = {sizeof(info), CEB_REJECT, -1, 0, reason, detail, 0};
  http_sink_metric_delivery(s, &info, n);
  for (size_t i = 0; i < n; i++)
    http_sink_settle(s, ds[i], &info);
}

static void retry_all(http_sink *s, ceb_delivery **ds, size_t n,
                      const char *reason, const char *detail) {
  ceb_settle_info info = {sizeof(info), CEB_RETRY, -1, 0, reason, detail, 0};
  http_sink_metric_delivery(s, &info, n);
  for (size_t i = 0; i < n; i++)
    http_sink_settle(s, ds[i], &info);
}

http_req *http_sink_req_new(http_sink *s, ceb_delivery **ds, size_t n) {
  http_req *r = calloc(1, sizeof(*r));
  ceb_delivery **copy = malloc(n * sizeof(*copy));
  if (!r || !copy) {
    free(r);
    free(copy);
    retry_all(s, ds, n, "internal", "out of memory");
    return NULL;
  }
  memcpy(copy, ds, n * sizeof(*copy));
  r->kind = HTTP_REQ_DELIVERY;
  r->resp_max = s->excerpt_max > HTTP_SINK_DETAIL_MAX ? s->excerpt_max
                                                      : HTTP_SINK_DETAIL_MAX;
  r->ds = copy;
  r->nd = n;
  int rc;
  if (s->mode == CEB_MODE_BATCH) {
    ceb_event **evs = malloc(n * sizeof(*evs));
    rc = evs ? CEB_OK : CEB_ENOMEM;
    for (size_t i = 0; evs && i < n; i++)
      evs[i] = (ceb_event *)ds[i]->event;
    if (rc == CEB_OK) rc = ceb_batch_encode(evs, n, &r->body, &r->body_len);
    free(evs);
    if (rc == CEB_OK) {
      static const char ct[] = "application/cloudevents-batch+json";
      rc = ceb_headers_add(&r->headers, "Content-Type", ct, strlen(ct));
    }
    r->msg_id = rc == CEB_OK ? batch_msg_id(ds, n) : NULL;
    r->url = rc == CEB_OK ? strdup(s->url) : NULL;
  } else {
    size_t json_len = 0;
    const ceb_mapped_out *mo = ceb_delivery_mapped(ds[0]);
    const char *json = s->mode == CEB_MODE_STRUCTURED
                           ? ceb_delivery_encoded(ds[0], &json_len)
                           : NULL;
    const char *bad = NULL;
    rc = mo     ? mapped_body(s, mo, r, &bad)
         : json ? structured_body(json, json_len, r)
                : ceb_http_encode(ds[0]->event, s->mode, &r->headers, &r->body,
                                  &r->body_len);
    if (rc == CEB_EINVAL && bad) {
      char detail[160];
      snprintf(detail, sizeof(detail),
               "the mapping's header '%.80s' is not a valid HTTP field", bad);
      reject_all(s, ds, n, "mapping.header", detail);
      r->nd = 0;
      http_sink_req_free(s, r);
      return NULL;
    }
    if (rc == CEB_OK && mo && mo->topic && s->callback_urls) {
      /* a client's callback: its own URL, checked as at ingest (the row
       * could have been written by anything with the store) */
      char why[128];
      if (http_callback_url_check(mo->topic, why, sizeof why) != CEB_OK) {
        char detail[200];
        snprintf(detail, sizeof detail, "the callback URL is refused: %s", why);
        reject_all(s, ds, n, "callback.url", detail);
        r->nd = 0;
        http_sink_req_free(s, r);
        return NULL;
      }
      r->url = strdup(mo->topic);
      r->callback = 1;
      r->callback_loopback = http_callback_url_loopback(mo->topic);
      r->callback_private = s->callback_private;
    } else if (rc == CEB_OK && s->url_templated) {
      rc = http_sink_url_expand(s->url, ds[0]->event, &r->url);
      if (rc == CEB_ENOTFOUND) {
        reject_all(s, ds, n, "url.attribute",
                   "the event lacks an attribute the URL template names");
        r->nd = 0;
        http_sink_req_free(s, r);
        return NULL;
      }
    } else if (rc == CEB_OK) {
      r->url = strdup(s->url);
    }
    r->msg_id = rc == CEB_OK ? single_msg_id(ds[0]) : NULL;
  }
  if (rc == CEB_OK && (!r->url || !r->msg_id)) rc = CEB_ENOMEM;
  if (rc != CEB_OK) {
    char detail[128];
    snprintf(detail, sizeof(detail), "encoding the event failed: %s",
             ceb_strerror(rc));
    if (rc == CEB_ENOMEM)
      retry_all(s, ds, n, "internal", detail);
    else
      reject_all(s, ds, n, "encode", detail);
    r->nd = 0;
    http_sink_req_free(s, r);
    return NULL;
  }
  return r;
}

void http_sink_req_free(http_sink *s, http_req *r) {
  if (!r) return;
  if (r->easy) {
    /* Keep the handle (and with the multi, its connection) for reuse. */
    if (s->nidle < (size_t)s->max_connections + 2) {
      curl_easy_reset(r->easy);
      s->idle[s->nidle++] = r->easy;
    } else {
      curl_easy_cleanup(r->easy);
    }
  }
  curl_slist_free_all(r->slist);
  ceb_headers_clear(&r->headers);
  ceb_free(r->body);
  free(r->form);
  free(r->url);
  free(r->msg_id);
  free(r->resp);
  free(r->ds);
  free(r);
}

/* ---- easy handle setup ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg) {
  http_req *r = arg;
  size_t n = size * nmemb;
  /* a delivery's body: enough for a failure's detail and for the excerpt
   * a success hands the host (response_excerpt) */
  size_t cap = r->kind == HTTP_REQ_TOKEN ? HTTP_SINK_TOKEN_BODY_MAX
               : r->resp_max             ? r->resp_max
                                         : HTTP_SINK_DETAIL_MAX;
  size_t take = r->resp_len < cap ? cap - r->resp_len : 0;
  if (take > n) take = n;
  if (take) {
    if (r->resp_len + take + 1 > r->resp_cap) {
      size_t nc = r->resp_len + take + 1;
      nc = nc < 256 ? 256 : nc * 2;
      if (nc > cap + 1) nc = cap + 1;
      char *nb = realloc(r->resp, nc);
      if (!nb) return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
      r->resp = nb;
      r->resp_cap = nc;
    }
    memcpy(r->resp + r->resp_len, data, take);
    r->resp_len += take;
    r->resp[r->resp_len] = '\0';
  }
  return n; /* the rest is read and dropped */
}

static void copy_header_value(char *dst, size_t dstlen, const char *v,
                              size_t n) {
  while (n && (*v == ' ' || *v == '\t')) {
    v++;
    n--;
  }
  while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
    n--;
  if (n >= dstlen) n = dstlen - 1;
  memcpy(dst, v, n);
  dst[n] = '\0';
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg) {
  http_req *r = arg;
  size_t n = size * nmemb;
  if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    /* A new response (after 1xx): forget the previous one's headers. */
    r->retry_after[0] = '\0';
    r->allowed_origin[0] = '\0';
    r->allowed_rate[0] = '\0';
  } else if (n > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
    copy_header_value(r->retry_after, sizeof(r->retry_after), data + 12,
                      n - 12);
  } else if (n > 23 && strncasecmp(data, "WebHook-Allowed-Origin:", 23) == 0) {
    copy_header_value(r->allowed_origin, sizeof(r->allowed_origin), data + 23,
                      n - 23);
  } else if (n > 21 && strncasecmp(data, "WebHook-Allowed-Rate:", 21) == 0) {
    copy_header_value(r->allowed_rate, sizeof(r->allowed_rate), data + 21,
                      n - 21);
  }
  return n;
}

static int add_header(struct curl_slist **list, const char *name,
                      const char *value) {
  char line[8192];
  int n = snprintf(line, sizeof(line), "%s: %s", name, value ? value : "");
  if (n < 0 || (size_t)n >= sizeof(line)) return CEB_ETOOLARGE;
  if (!value || !*value) /* "Name;" sends an empty header */
    snprintf(line, sizeof(line), "%s;", name);
  struct curl_slist *nl = curl_slist_append(*list, line);
  if (!nl) return CEB_ENOMEM;
  *list = nl;
  return CEB_OK;
}

static int add_raw(struct curl_slist **list, const char *line) {
  struct curl_slist *nl = curl_slist_append(*list, line);
  if (!nl) return CEB_ENOMEM;
  *list = nl;
  return CEB_OK;
}

static int build_headers(http_sink *s, http_req *r, const char *token) {
  int rc = CEB_OK;
  struct curl_slist *l = NULL;
  for (struct curl_slist *h = s->static_headers; h && rc == CEB_OK; h = h->next)
    rc = add_raw(&l, h->data);
  if (r->kind == HTTP_REQ_DELIVERY) {
    int has_ct = 0;
    for (size_t i = 0; i < r->headers.count && rc == CEB_OK; i++) {
      if (strcasecmp(r->headers.items[i].name, "Content-Type") == 0) has_ct = 1;
      rc = add_header(&l, r->headers.items[i].name, r->headers.items[i].value);
    }
    /* curl would label a bare POST as a form: an event without data has no
     * Content-Type at all. */
    if (rc == CEB_OK && !has_ct) rc = add_raw(&l, "Content-Type:");
    if (rc == CEB_OK) rc = add_header(&l, "Idempotency-Key", r->msg_id);
    if (rc == CEB_OK && s->keys) {
      int64_t now_s = s->host->now_ms(s->inst) / 1000;
      char ts[24], *sig = NULL;
      snprintf(ts, sizeof(ts), "%" PRId64, now_s);
      rc =
          http_webhook_sign(s->keys, r->msg_id, ts, r->body, r->body_len, &sig);
      if (rc == CEB_OK) rc = add_header(&l, "webhook-id", r->msg_id);
      if (rc == CEB_OK) rc = add_header(&l, "webhook-timestamp", ts);
      if (rc == CEB_OK) rc = add_header(&l, "webhook-signature", sig);
      free(sig);
    }
  } else if (r->kind == HTTP_REQ_HANDSHAKE) {
    rc = add_header(&l, "WebHook-Request-Origin", s->origin);
    if (rc == CEB_OK && s->rate_limit > 0) {
      /* the rate we would like, per minute (spec 4.1) */
      char rate[32];
      snprintf(rate, sizeof rate, "%.0f", ceil(s->rate_limit * 60.0));
      rc = add_header(&l, "WebHook-Request-Rate", rate);
    }
  } else {
    rc = add_raw(&l, "Accept: application/json");
  }
  if (rc == CEB_OK && token) {
    char auth[8192];
    if ((size_t)snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
                         token) >= sizeof(auth))
      rc = CEB_ETOOLARGE;
    else
      rc = add_raw(&l, auth);
  }
  if (rc == CEB_OK) rc = add_raw(&l, "Expect:");
  if (rc != CEB_OK) {
    curl_slist_free_all(l);
    return rc;
  }
  curl_slist_free_all(r->slist);
  r->slist = l;
  return CEB_OK;
}

/* libcurl's socket opener for a client's callback: the address it is about
 * to connect to, after resolution, must be one a callback may reach
 * (http_callback_addr_check: no link-local metadata service, no inner
 * network unless callback_private_networks). A refused address fails the
 * transfer (CURLE_COULDNT_CONNECT, or the next address is tried); the
 * reason stays in r->refused for the settle. Runs on the loop thread. */
static curl_socket_t open_callback_socket(void *arg, curlsocktype purpose,
                                          struct curl_sockaddr *a) {
  http_req *r = arg;
  if (purpose == CURLSOCKTYPE_IPCXN &&
      http_callback_addr_check(&a->addr, r->callback_loopback,
                               r->callback_private, r->refused,
                               sizeof r->refused) != CEB_OK)
    return CURL_SOCKET_BAD;
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* libcurl's check before a request is sent, on the connection it will go
 * out on: a callback can also be sent on a connection kept from an earlier
 * transfer of this sink (its url, an OAuth2 token request) to the same
 * host and port, which open_callback_socket never saw. The address that
 * connection is to must be one a callback may reach. Runs on the loop
 * thread. */
static int callback_prereq(void *arg, char *primary_ip, char *local_ip,
                           int primary_port, int local_port) {
  (void)local_ip;
  (void)local_port;
  http_req *r = arg;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *in = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
  if (primary_ip && inet_pton(AF_INET, primary_ip, &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    in->sin_port = htons((uint16_t)primary_port);
  } else if (primary_ip &&
             inet_pton(AF_INET6, primary_ip, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons((uint16_t)primary_port);
  } /* else: family unset, which the check refuses */
  if (http_callback_addr_check((struct sockaddr *)&ss, r->callback_loopback,
                               r->callback_private, r->refused,
                               sizeof r->refused) != CEB_OK)
    return CURL_PREREQFUNC_ABORT;
  /* an address refused before this one (the resolver gave several) is no
   * reason to reject a transfer that fails later on this one */
  r->refused[0] = '\0';
  return CURL_PREREQFUNC_OK;
}

#define SETOPT(e, opt, val)                                                    \
  do {                                                                         \
    if (curl_easy_setopt((e), (opt), (val)) != CURLE_OK) return CEB_EINTERNAL; \
  } while (0)

int http_sink_req_prepare(http_sink *s, http_req *r, const char *token,
                          int64_t timeout_ms) {
  if (!r->easy) {
    r->easy = s->nidle ? s->idle[--s->nidle] : curl_easy_init();
    if (!r->easy) return CEB_ENOMEM;
  } else {
    curl_easy_reset(r->easy);
  }
  r->resp_len = 0;
  if (r->resp) r->resp[0] = '\0';
  r->retry_after[0] = '\0';
  r->allowed_origin[0] = '\0';
  r->allowed_rate[0] = '\0';
  r->errbuf[0] = '\0';
  r->refused[0] = '\0';
  int rc = build_headers(s, r, token);
  if (rc != CEB_OK) return rc;
  CURL *e = r->easy;
  const char *url =
      r->kind == HTTP_REQ_TOKEN ? http_oauth_client_url(s->oauth) : r->url;
  SETOPT(e, CURLOPT_URL, url);
  /* callbacks: http only to loopback addresses (http_callback_url_check) */
  SETOPT(e, CURLOPT_PROTOCOLS_STR,
         s->allow_insecure || s->callback_urls ? "http,https" : "https");
  SETOPT(e, CURLOPT_FOLLOWLOCATION, 0L);
  SETOPT(e, CURLOPT_NOSIGNAL, 1L);
  SETOPT(e, CURLOPT_TCP_KEEPALIVE, 1L);
  SETOPT(e, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
  if (http_tls_client_apply(e, &s->tls) != CURLE_OK) return CEB_EINTERNAL;
  if (s->user_agent) SETOPT(e, CURLOPT_USERAGENT, s->user_agent);
  SETOPT(e, CURLOPT_HTTPHEADER, r->slist);
  SETOPT(e, CURLOPT_WRITEFUNCTION, on_body);
  SETOPT(e, CURLOPT_WRITEDATA, r);
  SETOPT(e, CURLOPT_HEADERFUNCTION, on_header);
  SETOPT(e, CURLOPT_HEADERDATA, r);
  SETOPT(e, CURLOPT_ERRORBUFFER, r->errbuf);
  SETOPT(e, CURLOPT_PRIVATE, r);
  if (r->kind == HTTP_REQ_DELIVERY && r->callback && !s->callback_proxy) {
    SETOPT(e, CURLOPT_OPENSOCKETFUNCTION, open_callback_socket);
    SETOPT(e, CURLOPT_OPENSOCKETDATA, r);
    SETOPT(e, CURLOPT_PREREQFUNCTION, callback_prereq);
    SETOPT(e, CURLOPT_PREREQDATA, r);
    /* no proxy from the environment (http_proxy, https_proxy, ALL_PROXY):
     * through a proxy, the address checked would be the proxy's while the
     * proxy reaches whatever host the client named */
    SETOPT(e, CURLOPT_PROXY, "");
  } else if (r->kind == HTTP_REQ_DELIVERY && r->callback) {
    /* the operator's callback_proxy: the only address connected to is the
     * proxy's, which the operator chose (typically on an inner network,
     * which the address check would refuse), and the proxy resolves the
     * client's host: the proxy enforces the policy, not this check. Every
     * callback goes through it: no_proxy from the environment is ignored
     * (an empty CURLOPT_NOPROXY replaces it), else a client's host named
     * there would go direct and unchecked. */
    SETOPT(e, CURLOPT_PROXY, s->callback_proxy);
    SETOPT(e, CURLOPT_NOPROXY, "");
  }
  if (r->kind == HTTP_REQ_DELIVERY) {
    SETOPT(e, CURLOPT_POST, 1L);
    SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    SETOPT(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
  } else if (r->kind == HTTP_REQ_TOKEN) {
    const char *user, *password;
    free(r->form);
    r->form = NULL;
    rc = http_oauth_client_request(s->oauth, s->host->now_ms(s->inst), &r->form,
                                   &user, &password);
    if (rc != CEB_OK) return rc;
    SETOPT(e, CURLOPT_POST, 1L);
    SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->form));
    SETOPT(e, CURLOPT_POSTFIELDS, r->form);
    if (user) {
      SETOPT(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
      SETOPT(e, CURLOPT_USERNAME, user);
      SETOPT(e, CURLOPT_PASSWORD, password);
    }
  } else {
    SETOPT(e, CURLOPT_CUSTOMREQUEST, "OPTIONS");
  }
  return CEB_OK;
}
