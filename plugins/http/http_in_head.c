/* Request head checks libmicrohttpd does not make (http_in_head.h). */
#include "http_in_head.h"

#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Headers read as a single value: a second field would be ignored (the
 * first wins), so a sender and the bridge could disagree on the request. */
static const char *const SINGLE[] = {"Idempotency-Key",
                                     "Content-Type",
                                     "Content-Length",
                                     "Transfer-Encoding",
                                     "Authorization",
                                     "Host",
                                     "traceparent",
                                     "webhook-id",
                                     "webhook-timestamp",
                                     "webhook-signature",
                                     "WebHook-Request-Origin",
                                     NULL};

int http_in_head_layout_known(void) {
  /* 0.9.75 parses in place; later versions changed the header parser */
  const char *v = MHD_get_version();
  return v && strcmp(v, "0.9.75") == 0;
}

/* The header's name for a detail text: printable ASCII, bounded. */
static void name_of(const char *name, char *out, size_t n) {
  size_t k = 0;
  for (const char *c = name; *c && k + 4 < n; c++)
    out[k++] = *c > 0x20 && *c < 0x7f && *c != '"' && *c != '\\' ? *c : '?';
  out[k] = '\0';
}

static int gaps_ok(const ceb_headers *h, const char *head, size_t head_len,
                   http_head_problem *p);

static int single_valued(const char *name) {
  if (strncasecmp(name, "ce-", 3) == 0) return 1;
  for (size_t i = 0; SINGLE[i]; i++)
    if (strcasecmp(name, SINGLE[i]) == 0) return 1;
  return 0;
}

static int fail(http_head_problem *p, const char *code, const char *name,
                const char *what) {
  char n[64];
  name_of(name, n, sizeof n);
  p->status = 400;
  p->code = code;
  snprintf(p->detail, sizeof p->detail, "header %s: %s", n, what);
  return 0;
}

/* A value byte outside visible ASCII, space and tab (RFC 9110 field-vchar
 * without obs-text). */
static int bad_value(const char *v) {
  for (const unsigned char *c = (const unsigned char *)v; *c; c++)
    if ((*c < 0x20 && *c != '\t') || *c >= 0x7f) return 1;
  return 0;
}

/* RFC 9110 5.1: a field name is a token. libmicrohttpd 0.9.75 keeps
 * whitespace before the colon in the name ("Idempotency-Key : k" is a field
 * "Idempotency-Key ", read by nobody, which a proxy in front may take for
 * the real one) and a line starting with whitespace right after the request
 * line as a name with a leading space; RFC 9112 5.1 says to refuse both. */
static int token_name(const char *name) {
  if (!*name) return 0;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          (*c >= '0' && *c <= '9') || strchr("!#$%&'*+-.^_`|~", *c)))
      return 0;
  return 1;
}

/* What lies between the end of a value (at `from`) and `to` (the next
 * name, or the end of the head): the line end alone is 1 (LF) or 2 (CRLF)
 * NULs, `tail` more at the end of the head (the empty line). 0: fine, or
 * the problem code. */
static const char *gap_problem(const char *from, const char *to, size_t tail) {
  if (to < from) return "header.folded";
  size_t n = (size_t)(to - from);
  size_t zeros = 0;
  while (zeros < n && from[zeros] == '\0')
    zeros++;
  if (zeros == n) /* only NULs: CRLF/LF (+ the empty line), or a NUL more */
    return n >= 1 && n <= 2 + tail ? NULL : "header.invalid";
  /* a line starting with SP/HT after the line end: a continuation */
  if (from[zeros] == ' ' || from[zeros] == '\t') return "header.folded";
  return "header.invalid"; /* bytes after a NUL inside the value */
}

/* RFC 9112 6.1/6.3: libmicrohttpd 0.9.75 reads a body as chunked only for
 * "Transfer-Encoding: chunked" exactly; any other value (an unknown or a
 * listed coding) makes it read the body to the end of the connection, and
 * with both Transfer-Encoding and Content-Length it goes by the former while
 * a proxy in front may go by the latter: either way the next request on a
 * proxy's kept-alive connection would be read as this one's body. */
static int framing_ok(const ceb_headers *h, http_head_problem *p) {
  const char *te = ceb_headers_get(h, "Transfer-Encoding");
  if (!te) return 1;
  if (ceb_headers_get(h, "Content-Length"))
    return fail(p, "header.invalid", "Transfer-Encoding",
                "sent with Content-Length; send one of them");
  if (strcasecmp(te, "chunked") == 0) return 1;
  fail(p, "transfer_encoding.unsupported", "Transfer-Encoding",
       "only chunked is understood");
  p->status = 501;
  return 0;
}

int http_in_head_check(const ceb_headers *h, const char *head, size_t head_len,
                       http_head_problem *p) {
  for (size_t i = 0; i < h->count; i++) {
    const char *name = h->items[i].name, *value = h->items[i].value;
    if (bad_value(value))
      return fail(p, "header.invalid", name,
                  "control character or raw non-ASCII byte in the value "
                  "(percent-encode ce-* values)");
    if (single_valued(name))
      for (size_t k = 0; k < i; k++)
        if (strcasecmp(h->items[k].name, name) == 0)
          return fail(p, "header.duplicate", name,
                      "sent more than once; send one field");
  }
  if (!framing_ok(h, p)) return 0;
  if (head && !gaps_ok(h, head, head_len, p)) return 0;
  /* after the gaps: a folded line is reported as such, though libmicrohttpd
   * appended it to the name */
  for (size_t i = 0; i < h->count; i++)
    if (!token_name(h->items[i].name))
      return fail(p, "header.invalid", h->items[i].name,
                  "the name is not a token (whitespace before the colon or "
                  "at the start of the line?)");
  return 1;
}

/* The NUL and obs-fold checks: the bytes between each value and the next
 * name, all within [head, head + head_len). */
static int gaps_ok(const ceb_headers *h, const char *head, size_t head_len,
                   http_head_problem *p) {
  uintptr_t lo = (uintptr_t)head, hi = lo + head_len;
  for (size_t i = 0; i < h->count; i++) {
    const char *name = h->items[i].name, *value = h->items[i].value;
    uintptr_t n = (uintptr_t)name, v = (uintptr_t)value;
    /* a folded line is joined onto a copy of the name, outside the head */
    if (n < lo || n >= hi || v < lo || v > hi)
      return fail(p, "header.folded", name,
                  "obsolete line folding (obs-fold); send the value on one "
                  "line");
    const char *end = value + h->items[i].value_len;
    const char *next =
        i + 1 < h->count ? h->items[i + 1].name : head + head_len;
    if ((uintptr_t)next < lo || (uintptr_t)next > hi) continue; /* above */
    const char *code = gap_problem(end, next, i + 1 < h->count ? 0 : 2);
    if (code)
      return fail(p, code, name,
                  strcmp(code, "header.folded") == 0
                      ? "obsolete line folding (obs-fold); send the value on "
                        "one line"
                      : "NUL byte in the value");
  }
  return 1;
}
