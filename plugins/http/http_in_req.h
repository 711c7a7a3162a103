/* One request of the intermediary, shared by its files: the libmicrohttpd
 * state machine (http_in_request.c), authentication (http_in_auth.c), the
 * decode and submit with its ack wait (http_in_submit.c) and idempotency
 * (http_idem.c).
 *
 * A request record is shared by the MHD thread and the host's callback
 * threads (submit, JWKS): `lock` guards the hand-over fields and `refs`
 * keeps it alive until all are done with it. Everything else is the MHD
 * thread's. */
#ifndef HTTP_IN_REQ_H
#define HTTP_IN_REQ_H

#include "http_idem.h"
#include "http_in_int.h"
#include "http_in_reply.h"

#define LOG(s, lvl, ...) CEB_LOG((s)->host, (s)->inst, lvl, __VA_ARGS__)

typedef enum req_phase {
  PHASE_BODY = 0, /* reading the body */
  PHASE_WAIT = 1, /* submitted: waiting for the durability callback */
  PHASE_DONE = 2, /* a response was queued */
  PHASE_KEYS = 3  /* head read; unknown kid: waiting for the JWKS refresh */
} req_phase;

/* Request headers held without copies (most requests have fewer). */
#define REQ_HEADERS_INLINE 12
#define WEBHOOK_ID_MAX 255
#define BODY_FIRST_MAX (64 * 1024)
#define BODY_DISCARD_FACTOR 16 /* read and dropped to answer 413 */

typedef struct http_req {
  atomic_int refs;
  struct http_req *next, *prev; /* src->suspended, under src->lock */
  int listed;
  http_source *src;
  struct MHD_Connection *conn;
  int64_t start_ns;
  req_phase phase;
  int is_options;
  int route;     /* http_route_id: a published GET when not EVENTS */
  char *get_url; /* a published GET's target, kept over a JWKS wait */

  /* names and values borrowed from libmicrohttpd, which keeps them until
   * the request completes; only the items array can be ours (heap when
   * more than REQ_HEADERS_INLINE) */
  ceb_headers headers;
  ceb_header headers_inline[REQ_HEADERS_INLINE];
  char *body;
  size_t len, cap;
  size_t announced; /* Content-Length, 0 when absent */
  int too_large;
  size_t discarded;

  char client[256]; /* "" when anonymous */
  int has_client;
  const char *callback; /* the callback URL of the request's events (the
                           X-Callback header's, or the client's default;
                           borrowed), NULL: none */
  char idem_key[HTTP_IDEM_KEY_LEN + 1];
  int has_key;
  int idem_reserved;
  const char *webhook_id; /* the header's value once verified, or NULL */
  int webhook_seen;       /* webhook_id was accepted before: answer as a
                             duplicate, submit nothing */

  int submitted; /* counted in src->pending */
  char *ids;     /* JSON array of the submitted events' ids */
  size_t ids_len;
  http_reply reply;
  int status;

  /* hand-over with the submit and JWKS callbacks, under lock */
  pthread_mutex_t lock;
  int suspended, closed, done;
  int keys_suspended, keys_woken;
  int cb_status;
  size_t accepted, duplicates;
  /* the callback of submit_mapped_async refused the request (ABI 1.4):
   * what it said, malloc'd, NULL otherwise */
  struct http_refusal *refusal;
} http_req;

/* One per request: small enough for malloc's per-thread cache (larger
 * blocks take the slower path, with consolidations). */
_Static_assert(sizeof(http_req) <= 1024, "http_req outgrew the tcache");

/* Drops one reference; the last frees the request. Any thread. */
void http_req_unref(http_req *r);

/* Lists r among the suspended requests (http_source_resume_all resumes
 * them). Caller holds s->lock. */
void http_req_enlist(http_source *s, http_req *r);

/* 429 key.limit problem+json with Retry-After (retry_after_s): the submit
 * was refused because an event's ordering key is at its route's
 * max_open_per_key. Request thread. */
void http_req_key_limited(http_req *r);
/* A 503 problem with Retry-After: retry_after_s. */
void http_req_unavailable(http_req *r, const char *code, const char *detail);

/* The per-client rate limit (rate_limit): 1 within it, 0 refused with
 * 429 in r->reply. MHD thread. */
int http_in_rate_ok(http_req *r);

/* Callbacks (http_in_callback.c). The request's callback URL into
 * r->callback: the X-Callback header's when sent (1; 0 with a 400 problem
 * naming the header in r->reply when it is malformed, sent twice, or the
 * host sends no callbacks for this source), else the client's default
 * (clients.<client>.callback). MHD thread. */
int http_in_callback_of(http_req *r);

/* http_in_auth.c, MHD thread. */

/* Counts cebridge_http_auth_failures_total{reason}. */
void http_in_auth_failure(http_source *s, const char *reason);

/* The bearer token's check: 1 authenticated (r->client set when the token
 * names one), 0 refused (r->reply set: 401/403 with WWW-Authenticate), 2
 * suspended waiting for the JWKS (an unknown kid while the key set is being
 * refreshed). after_wait: the keys as they are, no new refresh or wait. */
int http_in_authenticate(http_req *r, int after_wait);

/* The webhook-signature headers against the body: 1 verified (r->webhook_id
 * and r->webhook_seen set), 0 refused (r->reply set). */
int http_in_verify_webhook(http_req *r);

/* The event types a client may send (clients.<client>.types), or NULL. */
const char *http_in_client_types(http_source *s, const char *client);

/* 1 when every event's type is allowed for r's client; 0 with a 403 problem
 * listing the others in r->reply. */
int http_in_authorise_types(http_req *r, ceb_event **events, size_t count,
                            int batch);

/* http_in_submit.c, MHD thread (on_submitted: the host's thread). */

/* Decodes the body (binary, structured or batch). 1 with *events (count,
 * batch) the caller's, to release with http_in_events_release; 0 when
 * r->reply is set. */
int http_in_decode(http_req *r, ceb_event ***events, size_t *count, int *batch);

/* Frees the events array from http_in_decode; unref: also drop the
 * events' references (not after a successful submit: the host has them). */
void http_in_events_release(ceb_event **events, size_t count, int batch,
                            int unref);

/* CloudEvents rules of every event of a batch, so that the problem lists
 * each failing event. The SDK marks each event that passes
 * (ceb_event_checked): the host's validation then runs only the size limit
 * and the profile level's rules, and stops at the first failing event.
 * 1 valid, 0 when r->reply is set. */
int http_in_validate_all(http_req *r, ceb_event **events, size_t count,
                         int batch);

/* Submits the events (consumed). 1 when the connection was suspended to
 * await the durability callback; 0 when r->reply is set. */
int http_in_submit(http_req *r, ceb_event **events, size_t count, int batch);

/* A source with `map` (ABI 1.2): builds the request's input document
 * (http_in_doc.h) and hands it to host->submit_mapped_async (ABI 1.4; a
 * 1.2 / 1.3 host: submit_mapped, which holds this thread while the program
 * runs), whose map program makes the events. 1 when the connection was
 * suspended to await the callback; 0 when r->reply is set: 400
 * mapping.failed with the program's error when it refused the request,
 * else as http_in_submit. */
int http_in_submit_mapped(http_req *r, const char *method, const char *url);

/* The reply once the callback came: 202 with the ack body (without "ids"
 * after a mapped submit: the ids are the program's), 503, or the refusal
 * of an asynchronous mapped submit (as http_in_submit_mapped's). */
void http_in_reply_submitted(http_req *r);

/* The answer to a request whose webhook-id was accepted before: the 202 of
 * a request whose every event is a duplicate. */
void http_in_reply_webhook_seen(http_req *r, ceb_event **events, size_t count);

#endif
