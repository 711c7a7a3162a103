/* Internals of the webhook sink shared by its files (http_out*.c). */
#ifndef HTTP_OUT_INT_H
#define HTTP_OUT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include <ceb/ceb.h>

#include "http_oauth.h"
#include "http_out.h"
#include "http_out_circuit.h"
#include "http_out_pace.h"
#include "http_tls.h"
#include "http_webhook_sig.h"

/* How much of a response body a delivery keeps for the DLQ detail, and how
 * much a token response may hold. */
#define HTTP_SINK_DETAIL_MAX 512
#define HTTP_SINK_TOKEN_BODY_MAX (64 * 1024)

typedef enum http_req_kind {
  HTTP_REQ_DELIVERY = 0, /* one event, or a batch of events */
  HTTP_REQ_TOKEN = 1,    /* OAuth2 token fetch */
  HTTP_REQ_HANDSHAKE = 2 /* CloudEvents webhook validation (OPTIONS) */
} http_req_kind;

/* One queued delivery (from deliver() to the loop). */
typedef struct http_item {
  struct http_item *next;
  ceb_delivery *d;
} http_item;

/* One HTTP exchange owned by the loop thread. */
typedef struct http_req {
  struct http_req *next;
  http_req_kind kind;
  ceb_delivery **ds; /* deliveries settled by this request's result */
  size_t nd;
  char *url;
  ceb_headers headers; /* encoding headers (Content-Type, ce-*) */
  char *body;          /* delivery body from the SDK (ceb_free) */
  char *form;          /* token request body (free) */
  size_t body_len;
  char *msg_id; /* webhook-id and Idempotency-Key */
  CURL *easy;
  struct curl_slist *slist;
  char errbuf[CURL_ERROR_SIZE];
  char *resp; /* captured response body, NUL-terminated */
  size_t resp_len, resp_cap;
  size_t resp_max; /* a delivery's: the most of resp kept (response_excerpt,
                      at least HTTP_SINK_DETAIL_MAX); 0 for others */
  char retry_after[64];
  char allowed_origin[256];
  char allowed_rate[32]; /* WebHook-Allowed-Rate of a handshake's answer */
  int refreshed;         /* already re-sent once after a 401 */
  int dest_passed;       /* its destination's circuit let it through */
  int callback;          /* a client's callback: its address is checked */
  int callback_loopback; /* its URL names a loopback host */
  int callback_private;  /* the sink's callback_private_networks */
  char refused[192];     /* why its address was refused (at connect) */
  uint64_t token_generation;
  int64_t started_mono_ms;
} http_req;

typedef enum http_gate {
  HTTP_GATE_NONE = 0, /* not needed, or not done yet */
  HTTP_GATE_RUNNING = 1,
  HTTP_GATE_DONE = 2
} http_gate;

typedef struct http_sink {
  const ceb_host *host;
  ceb_instance *inst;
  /* config (immutable after init) */
  char *url; /* may hold ${attr} placeholders */
  int url_templated;
  ceb_mode mode;
  int64_t batch_max;
  int64_t batch_wait_ms;
  int64_t max_connections;
  int64_t max_pending;
  int64_t timeout_ms;
  size_t excerpt_max; /* response_excerpt: body bytes kept on success */
  int allow_insecure;
  int callback_urls;    /* a mapped delivery's topic is its URL (callbacks) */
  int callback_private; /* callbacks may reach private networks */
  char *callback_proxy; /* callback_proxy, or NULL: callbacks go direct */
  http_tls_client tls;  /* policy, CA, client certificate */
  char *user_agent;
  struct curl_slist *static_headers; /* headers.<Name> and User-Agent */
  int handshake;
  char *origin;      /* WebHook-Request-Origin */
  double rate_limit; /* the sink's configured rate_limit, per s; 0: none */
  http_webhook_keys *keys;
  http_oauth_client *oauth;

  /* shared with deliver(), under lock */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  http_item *q_head, *q_tail;
  size_t outstanding; /* accepted, not yet settled */
  int draining;
  int abort_all; /* settle everything RETRY "shutdown" */
  int stopping;  /* leave the loop */

  /* loop thread only */
  pthread_t thread;
  int thread_started;
  CURLM *multi;
  http_req *pending_head, *pending_tail; /* ready to send, in order */
  ceb_delivery **batch;                  /* collecting batch */
  size_t nbatch;
  int64_t batch_first_mono_ms;
  http_req *active; /* transfers in the multi */
  size_t nactive;
  CURL **idle; /* easy handles kept for reuse */
  size_t nidle;
  http_gate token_gate;
  int64_t token_retry_mono_ms; /* no fetch before (after a failure) */
  char token_error[160];
  http_gate handshake_gate;
  http_pace pace;          /* the rate the handshake's receiver allowed */
  int64_t expired_mono_ms; /* last deadline sweep of the pending queue */
  /* templated URL: a circuit per expanded URL (loop thread); NULL else,
   * and the host's circuit covers the sink */
  http_dest_table *dests;
} http_sink;

/* ---- http_out_loop.c ---- */
void *http_sink_loop(void *arg);
/* Settles every delivery of the sink that has not settled (queue, batch,
 * pending, active) RETRY "shutdown". Loop thread, or control thread once the
 * loop is gone. */
void http_sink_abort_all(http_sink *s);

/* ---- http_out_request.c ---- */
/* Monotonic clock for latency and internal timers. */
int64_t http_sink_mono_ms(void);
/* Settles d (and accounts for it): outcome from info. */
void http_sink_settle(http_sink *s, ceb_delivery *d,
                      const ceb_settle_info *info);
/* Settles every delivery of r the same way (reason/detail copied by host). */
void http_sink_settle_req(http_sink *s, http_req *r, ceb_outcome outcome,
                          int status, const char *reason, const char *detail,
                          int64_t retry_after_ms, unsigned flags);
/* Builds a delivery request for n deliveries (1 for binary/structured).
 * On a permanent encoding problem settles them REJECT and returns NULL. */
http_req *http_sink_req_new(http_sink *s, ceb_delivery **ds, size_t n);
void http_sink_req_free(http_sink *s, http_req *r);
/* Prepares r's easy handle (URL, body, headers, timeouts, TLS) for sending
 * now; token may be NULL. CEB_OK or < 0 (r untouched as to settling). */
int http_sink_req_prepare(http_sink *s, http_req *r, const char *token,
                          int64_t timeout_ms);
/* Expands ${attr} placeholders of the URL for ev; *out malloc'd.
 * CEB_ENOTFOUND when an attribute is unset. */
int http_sink_url_expand(const char *tmpl, const ceb_event *ev, char **out);
/* CEB_OK when every placeholder of tmpl is closed and names an attribute. */
int http_sink_url_check(const char *tmpl, int *templated);

/* 1 when the sink sends header `name` itself (its protocol headers, the
 * configured headers.*, ce-*): an egress mapping's header of that name is
 * dropped, the sink's wins. Any thread (reads the config only). */
int http_sink_header_own(const http_sink *s, const char *name);
/* 1 when name is an HTTP field name (a token, RFC 9110 5.1). */
int http_sink_header_name_ok(const char *name);

/* ---- metrics ---- */
void http_sink_metric_delivery(http_sink *s, const ceb_settle_info *info,
                               size_t count);

#endif
