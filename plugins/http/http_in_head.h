/* Checks of a request head that libmicrohttpd 0.9.75 lets through silently
 * and that the intermediary must refuse with a clear 400 instead of reading
 * something else than was sent:
 *  - a header value with a control character or raw non-ASCII bytes
 *    (CloudEvents' HTTP binding percent-encodes ce-* values; raw UTF-8 would
 *    be taken byte by byte);
 *  - a NUL inside a header value (libmicrohttpd keeps C strings: the value
 *    ends at the NUL and the rest is dropped);
 *  - an obsolete line folding (obs-fold, RFC 9112 section 5.2: "reject the
 *    message"; libmicrohttpd appends the continuation to the header's NAME);
 *  - a field name that is not a token (whitespace before the colon, or a
 *    first field line starting with whitespace: RFC 9112 5.1);
 *  - request framing a proxy in front may read otherwise: Transfer-Encoding
 *    with Content-Length, or with another value than "chunked" (which
 *    libmicrohttpd reads as a body ending with the connection);
 *  - a second field of a header that is read as one value (Idempotency-Key,
 *    Content-Type, ce-*, webhook-*, ...).
 * libmicrohttpd offers no hook with the raw head. It parses the head in
 * place in the connection's read buffer (CR, LF and the colon become NULs),
 * so the bytes between one header's value and the next header's name are
 * the line end only, unless the value held a NUL or the next line was a
 * continuation. http_in_head_check reads those gaps; it is used only with the
 * library versions whose parser is known to work so
 * (http_in_head_layout_known). Reentrant. */
#ifndef HTTP_IN_HEAD_H
#define HTTP_IN_HEAD_H

#include <ceb/ceb.h>
#include <stddef.h>

typedef struct http_head_problem {
  int status;       /* 400, or 501 for a transfer coding not understood */
  const char *code; /* "header.invalid", "header.folded", "header.duplicate" */
  char detail[160]; /* names the header (printable ASCII only) */
} http_head_problem;

/* 1 when the running libmicrohttpd parses heads in place as 0.9.75 does
 * (the NUL and obs-fold checks need it). */
int http_in_head_layout_known(void);

/* Checks the headers h (names and values borrowed from libmicrohttpd, in
 * the order received). head/head_len: the request head as libmicrohttpd
 * parsed it in place (from the method to the end of the empty line), or
 * NULL to skip the NUL and obs-fold checks. Returns 1 when the head is
 * acceptable, 0 with *p set. */
int http_in_head_check(const ceb_headers *h, const char *head, size_t head_len,
                       http_head_problem *p);

#endif
