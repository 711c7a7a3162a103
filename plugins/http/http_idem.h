/* Idempotency-Key helpers (draft-ietf-httpapi-idempotency-key-header,
 * Edukoppeling annex B): the key is a UUID v4, sent as a structured-field
 * string ("...") or bare; the fingerprint binds the key to one request.
 * The key and fingerprint helpers are pure functions, reentrant; the
 * reservation (http_idem_begin / http_idem_settle) of one request runs on
 * its thread and goes through the host's idempotency store. */
#ifndef HTTP_IDEM_H
#define HTTP_IDEM_H

#include <stddef.h>

#include <ceb/ceb.h>

#include "http_in_reply.h"

#define HTTP_IDEM_KEY_LEN 36
#define HTTP_FINGERPRINT_LEN 64

/* Extracts a UUID v4 (RFC 4122 version 4, variant 10xx) from the header
 * value into key (lower-cased, 37 bytes). CEB_OK or CEB_EINVAL. */
int http_idem_key_parse(const char *header, char key[HTTP_IDEM_KEY_LEN + 1]);

/* sha256 (hex) over method, path, content type, the ce-* headers (binary
 * mode: they carry the event) sorted by name, and the body. */
int http_idem_fingerprint(const char *method, const char *path,
                          const ceb_headers *headers, const void *body,
                          size_t len, char out[HTTP_FINGERPRINT_LEN + 1]);

/* One request's key, as the intermediary's request passes it. */
typedef struct http_idem_req {
  const ceb_host *host;
  ceb_instance *inst;
  const char *client; /* NULL when anonymous */
  const char *key;    /* parsed by http_idem_key_parse */
  int retry_after_s;  /* Retry-After of a 503 */
} http_idem_req;

/* Reserves the key for this request (method, url, headers and body make
 * its fingerprint). 1 when processing goes on: *reserved = 1, end it with
 * http_idem_settle. 0 when *reply is set: the stored response replayed
 * (Idempotent-Replayed: true), 409 idempotency.in_flight, 422
 * idempotency.mismatch, 503 idempotency.unavailable. */
int http_idem_begin(const http_idem_req *q, const char *method, const char *url,
                    const ceb_headers *headers, const void *body, size_t len,
                    int *reserved, http_reply *reply);

/* Ends a reservation with the request's response: 2xx and 4xx results are
 * stored for replay (the draft's rule), anything else releases the key so
 * that the client's retry is processed. */
void http_idem_settle(const http_idem_req *q, const http_reply *reply);

#endif
