/* Hostile request heads and bodies the intermediary must refuse with a clear
 * answer (a status and an application/problem+json body) rather than drop
 * the connection or read something else than was sent: a chunked body far
 * over max_body (413), a NUL in a header value, raw non-ASCII (UTF-8) in a
 * header value, an obsolete folded header line (obs-fold), and two
 * Idempotency-Key fields (400 each). Sent with raw sockets: libcurl will not
 * send these. A well-formed request with the same headers is accepted, so
 * the checks are not refusing everything. */
#include "hin_harness.h"
#include "hin_raw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BINARY_HEAD                                                            \
  "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"                               \
  "ce-specversion: 1.0\r\nce-source: urn:t\r\nce-type: nl.edu.t\r\n"           \
  "Content-Type: application/json\r\n"

/* Sends n bytes on a fresh connection and reads the answer. */
static hin_raw_resp exchange(hin_env *e, const char *req, size_t n) {
  hin_raw_resp r;
  memset(&r, 0, sizeof r);
  int fd = hin_raw_connect(e->port, NULL, 0);
  CHECK(fd >= 0);
  if (fd < 0) return r;
  CHECK(hin_raw_send(fd, req, n, 10000));
  hin_raw_read(fd, 10000, &r);
  close(fd);
  return r;
}

static void check_problem(const hin_raw_resp *r, int status, const char *code,
                          const char *what) {
  CHECK_MSG(r->status == status, "%s: status %d, want %d", what, r->status,
            status);
  CHECK_MSG(strcmp(r->ctype, "application/problem+json") == 0,
            "%s: Content-Type '%s'", what, r->ctype);
  char want[96];
  snprintf(want, sizeof want, "\"code\":\"%s\"", code);
  CHECK_MSG(strstr(r->body, want) != NULL, "%s: body %s, want %s", what,
            r->body, want);
}

/* A body of 3 * max_body in 512-byte chunks, no Content-Length. */
static void test_chunked_too_large(hin_env *e) {
  size_t before = ceb_fake_event_count(e->fake);
  int fd = hin_raw_connect(e->port, NULL, 0);
  CHECK(fd >= 0);
  if (fd < 0) return;
  static const char head[] = "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Content-Type: application/cloudevents+json\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n";
  CHECK(hin_raw_send(fd, head, sizeof head - 1, 10000));
  char chunk[600];
  memcpy(chunk, "200\r\n", 5);
  memset(chunk + 5, 'x', 512);
  memcpy(chunk + 517, "\r\n", 2);
  int sent = 1;
  for (int i = 0; sent && i < 6; i++) /* 3 KiB against max_body 1 KiB */
    sent = hin_raw_send(fd, chunk, 519, 10000);
  CHECK_MSG(sent, "the connection was dropped while the body was sent");
  CHECK(hin_raw_send(fd, "0\r\n\r\n", 5, 10000) || !sent);
  hin_raw_resp r;
  hin_raw_read(fd, 10000, &r);
  close(fd);
  check_problem(&r, 413, "too_large", "chunked body of 3x max_body");
  CHECK_INT(ceb_fake_event_count(e->fake), before);
}

static void test_nul_in_value(hin_env *e) {
  static const char req[] = BINARY_HEAD "ce-id: nul-1\r\n"
                                        "ce-subject: ab\0cd\r\n"
                                        "Content-Length: 2\r\n\r\n{}";
  hin_raw_resp r = exchange(e, req, sizeof req - 1);
  check_problem(&r, 400, "header.invalid", "NUL in a header value");
}

static void test_utf8_in_value(hin_env *e) {
  static const char req[] = BINARY_HEAD "ce-id: utf8-1\r\n"
                                        "ce-subject: Universit\xC3\xA4t\r\n"
                                        "Content-Length: 2\r\n\r\n{}";
  hin_raw_resp r = exchange(e, req, sizeof req - 1);
  check_problem(&r, 400, "header.invalid", "raw UTF-8 in a header value");
}

static void test_obs_fold(hin_env *e) {
  static const char req[] = BINARY_HEAD "ce-id: fold-1\r\n"
                                        "ce-subject: first\r\n"
                                        " second\r\n"
                                        "Content-Length: 2\r\n\r\n{}";
  hin_raw_resp r = exchange(e, req, sizeof req - 1);
  check_problem(&r, 400, "header.folded", "obs-fold header line");
  /* folded last header: the continuation is right before the empty line */
  static const char req2[] = BINARY_HEAD "ce-id: fold-2\r\n"
                                         "Content-Length: 2\r\n"
                                         "ce-subject: first\r\n"
                                         "\tsecond\r\n\r\n{}";
  r = exchange(e, req2, sizeof req2 - 1);
  check_problem(&r, 400, "header.folded", "obs-fold on the last header");
}

/* A fold followed by a head longer than libmicrohttpd's first read buffer:
 * the folded name is copied behind the buffer, so the buffer cannot grow in
 * place and moves (libmicrohttpd 0.9.75 memorypool.c). The head's parsed
 * bytes then span both blocks; the fold is still found and refused. */
static void test_obs_fold_long_head(hin_env *e) {
  /* 32 KiB per connection: a 16 KiB read buffer, filled by 140 parsed
   * lines of ~100 bytes, then a line that needs it to grow */
  size_t cap = 40000, n = 0;
  char *req = malloc(cap);
  CHECK(req != NULL);
  if (!req) return;
  n += (size_t)snprintf(req + n, cap - n, "%s",
                        BINARY_HEAD "ce-id: fold-3\r\n"
                                    "ce-subject: first\r\n second\r\n");
  for (int i = 0; i < 140; i++)
    n += (size_t)snprintf(req + n, cap - n, "X-Pad-%03d: %090d\r\n", i, i);
  n += (size_t)snprintf(req + n, cap - n, "X-Last: %03000d\r\n", 7);
  n += (size_t)snprintf(req + n, cap - n, "Content-Length: 2\r\n\r\n{}");
  hin_raw_resp r = exchange(e, req, n);
  free(req);
  check_problem(&r, 400, "header.folded", "obs-fold before a long head");
}

/* The second request of a kept-alive connection is parsed where the first
 * was (libmicrohttpd resets its pool): its NUL is found as well. */
static void test_keep_alive_second(hin_env *e) {
  static const char ok[] = BINARY_HEAD "ce-id: ka-1\r\n"
                                       "Content-Length: 2\r\n\r\n{}";
  static const char nul[] = BINARY_HEAD "ce-id: ka-2\r\n"
                                        "ce-subject: ab\0cd\r\n"
                                        "Content-Length: 2\r\n\r\n{}";
  int fd = hin_raw_connect(e->port, NULL, 0);
  CHECK(fd >= 0);
  if (fd < 0) return;
  hin_raw_resp r;
  CHECK(hin_raw_send(fd, ok, sizeof ok - 1, 10000));
  hin_raw_read(fd, 10000, &r);
  CHECK_MSG(r.status == 202 && !r.closed, "first: status %d closed %d",
            r.status, r.closed);
  CHECK(hin_raw_send(fd, nul, sizeof nul - 1, 10000));
  hin_raw_read(fd, 10000, &r);
  close(fd);
  check_problem(&r, 400, "header.invalid", "NUL in a kept-alive request");
}

/* A percent-encoded NUL in the target: libmicrohttpd decodes it into its C
 * string, so "/events%00x" was the path "/events" and accepted (202). */
static void test_nul_in_target(hin_env *e) {
  static const char req[] = "POST /events%00.json HTTP/1.1\r\n"
                            "Host: 127.0.0.1\r\n"
                            "ce-specversion: 1.0\r\nce-source: urn:t\r\n"
                            "ce-type: nl.edu.t\r\nce-id: url-1\r\n"
                            "Content-Type: application/json\r\n"
                            "Content-Length: 2\r\n\r\n{}";
  hin_raw_resp r = exchange(e, req, sizeof req - 1);
  check_problem(&r, 400, "url.invalid", "%00 in the request target");
  static const char lf[] = "POST /events%0Ax HTTP/1.1\r\n"
                           "Host: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}";
  r = exchange(e, lf, sizeof lf - 1);
  check_problem(&r, 400, "url.invalid", "%0A in the request target");
}

/* Framing a proxy in front may read otherwise (RFC 9112 6.1): with both
 * Transfer-Encoding and Content-Length libmicrohttpd went by the former
 * (a proxy by the latter would send the rest as the next request), and a
 * coding other than exactly "chunked" made it read the body until the
 * connection closed (this request waited for the close). */
static void test_framing(hin_env *e) {
  size_t before = ceb_fake_event_count(e->fake);
  static const char both[] =
      "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/cloudevents+json\r\n"
      "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\n";
  hin_raw_resp r = exchange(e, both, sizeof both - 1);
  check_problem(&r, 400, "header.invalid", "Transfer-Encoding and Length");
  static const char other[] = "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Type: application/cloudevents+json\r\n"
                              "Transfer-Encoding: gzip, chunked\r\n\r\n"
                              "0\r\n\r\n";
  r = exchange(e, other, sizeof other - 1);
  check_problem(&r, 501, "transfer_encoding.unsupported", "gzip, chunked");
  CHECK_INT(ceb_fake_event_count(e->fake), before);
}

static void test_two_idempotency_keys(hin_env *e) {
  static const char req[] =
      BINARY_HEAD "ce-id: idem-2\r\n"
                  "Idempotency-Key: 0b6c7a38-5d1e-4f2a-9c3b-1a2b3c4d5e6f\r\n"
                  "Idempotency-Key: 7e9f2c41-8a3b-4d5c-b6e7-f8091a2b3c4d\r\n"
                  "Content-Length: 2\r\n\r\n{}";
  hin_raw_resp r = exchange(e, req, sizeof req - 1);
  check_problem(&r, 400, "header.duplicate", "two Idempotency-Key fields");
}

/* RFC 9112 5.1: whitespace between a field name and its colon, or at the
 * start of the first field line, is refused. libmicrohttpd keeps it in the
 * name, so a second Idempotency-Key sent as "Idempotency-Key :" was
 * neither read nor seen as a duplicate (a proxy in front may read it). */
static void test_name_not_token(hin_env *e) {
  size_t before = ceb_fake_event_count(e->fake);
  static const char req[] =
      BINARY_HEAD "ce-id: tok-1\r\n"
                  "Idempotency-Key: 0b6c7a38-5d1e-4f2a-9c3b-1a2b3c4d5e6f\r\n"
                  "Idempotency-Key : 7e9f2c41-8a3b-4d5c-b6e7-f8091a2b3c4d\r\n"
                  "Content-Length: 2\r\n\r\n{}";
  hin_raw_resp r = exchange(e, req, sizeof req - 1);
  check_problem(&r, 400, "header.invalid", "space before a field's colon");
  static const char lead[] = "POST /events HTTP/1.1\r\n"
                             " ce-subject: lead\r\nHost: 127.0.0.1\r\n"
                             "ce-specversion: 1.0\r\nce-source: urn:t\r\n"
                             "ce-type: nl.edu.t\r\nce-id: tok-2\r\n"
                             "Content-Type: application/json\r\n"
                             "Content-Length: 2\r\n\r\n{}";
  r = exchange(e, lead, sizeof lead - 1);
  check_problem(&r, 400, "header.invalid", "space before the first field");
  CHECK_INT(ceb_fake_event_count(e->fake), before);
}

/* The same shapes, well-formed: accepted, and the values read as sent. */
static void test_well_formed(hin_env *e, const char *key) {
  size_t before = ceb_fake_event_count(e->fake);
  char req[512];
  int n = snprintf(req, sizeof req,
                   BINARY_HEAD "ce-id: ok-1\r\n"
                               "ce-subject:\tUniversit%%C3%%A4t\r\n"
                               "Idempotency-Key: %s\r\n"
                               "X-Empty:\r\n"
                               "Content-Length: 2\r\n\r\n{}",
                   key);
  hin_raw_resp r = exchange(e, req, (size_t)n);
  CHECK_MSG(r.status == 202, "status %d body %s", r.status, r.body);
  CHECK(ceb_fake_wait_events(e->fake, before + 1, 10000));
  ceb_event *ev = ceb_fake_event(e->fake, before);
  CHECK(ev != NULL);
  if (ev) {
    const char *subject = ceb_event_get(ev, "subject");
    CHECK_STR(subject, "Universit\xC3\xA4t");
    ceb_event_unref(ev);
  }
  /* chunked within max_body is read to the end and accepted */
  static const char chunked[] = "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Content-Type: application/cloudevents+json\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n"
                                "10\r\n{\"specversion\":\"\r\n"
                                "34\r\n1.0\",\"id\":\"ok-2\",\"source\":\"urn:"
                                "t\",\"type\":\"nl.edu.t\"}\r\n"
                                "0\r\n\r\n";
  r = exchange(e, chunked, sizeof chunked - 1);
  CHECK_MSG(r.status == 202, "chunked: status %d body %s", r.status, r.body);
  /* bare LF line ends (tolerated by libmicrohttpd) and trailing spaces are
   * not mistaken for a NUL or a folded line */
  static const char bare_lf[] = "POST /events HTTP/1.1\nHost: 127.0.0.1\n"
                                "ce-specversion: 1.0\nce-source: urn:t\n"
                                "ce-type: nl.edu.t  \nce-id: ok-3\n"
                                "X-Empty:\nContent-Type: application/json\n"
                                "Content-Length: 2\n\n{}";
  r = exchange(e, bare_lf, sizeof bare_lf - 1);
  CHECK_MSG(r.status == 202, "bare LF: status %d body %s", r.status, r.body);
}

int main(void) {
  static const char *const cfg[] = {"auth=none", "max_body=1KiB",
                                    "idempotency=optional", "threads=1", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    test_well_formed(e, "0b6c7a38-5d1e-4f2a-9c3b-1a2b3c4d5e6f");
    test_keep_alive_second(e);
    size_t accepted = ceb_fake_event_count(e->fake);
    test_chunked_too_large(e);
    test_nul_in_value(e);
    test_utf8_in_value(e);
    test_obs_fold(e);
    test_obs_fold_long_head(e);
    test_two_idempotency_keys(e);
    test_name_not_token(e);
    test_nul_in_target(e);
    test_framing(e);
    CHECK_INT(ceb_fake_event_count(e->fake), accepted);
    /* still serving */
    test_well_formed(e, "3f1d2c4b-6a5e-4b7c-8d9e-0f1a2b3c4d5e");
    hin_stop(e);
  }
  return ceb_test_done("test_http_in_head");
}
