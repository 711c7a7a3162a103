/* Unit tests of the intermediary's helpers: the bounded webhook-id replay
 * set, per-client token buckets, Idempotency-Key parsing and request
 * fingerprints, type patterns, base64url, problem bodies and the 202
 * body written without jansson (checked against jansson's dump). */
#include <stdio.h>
#include <stdlib.h>

#include "ceb_test.h"
#include "http_idem.h"
#include "http_in_ack.h"
#include "http_in_ratelimit.h"
#include "http_in_replay.h"
#include "http_in_reply.h"
#include "http_in_util.h"

static void test_replay(void) {
  http_replay *r = http_replay_new(4, 1000);
  CHECK(r != NULL);
  CHECK_INT(http_replay_check_add(r, "a", 0), 1);
  CHECK_INT(http_replay_check_add(r, "b", 10), 1);
  CHECK_INT(http_replay_check_add(r, "a", 20), 0);
  CHECK_INT(http_replay_check_add(r, "c", 30), 1);
  CHECK_INT(http_replay_check_add(r, "d", 40), 1);
  /* full: e pushes out the oldest (a) */
  CHECK_INT(http_replay_check_add(r, "e", 50), 1);
  CHECK_INT(http_replay_check_add(r, "b", 60), 0);
  CHECK_INT(http_replay_check_add(r, "a", 70), 1);
  /* past the window everything is forgotten */
  CHECK_INT(http_replay_check_add(r, "d", 2000), 1);
  CHECK_INT(http_replay_check_add(r, "c", 2001), 1);
  http_replay_free(r);

  /* many ids through a small set: the most recent ones are always known
   * (exercises tombstones and rebuilds) */
  r = http_replay_new(64, 1000000);
  int ok = 1;
  for (int i = 0; i < 20000 && ok; i++) {
    char id[32], prev[32];
    snprintf(id, sizeof id, "msg_%d", i);
    ok = http_replay_check_add(r, id, i) == 1;
    if (ok && i >= 10) {
      snprintf(prev, sizeof prev, "msg_%d", i - 10);
      ok = http_replay_check_add(r, prev, i) == 0;
    }
  }
  CHECK(ok);
  http_replay_free(r);
}

static void test_ratelimit(void) {
  http_ratelimit *rl = http_ratelimit_new(2.0, 2.0, 2);
  int64_t wait = 0;
  CHECK_INT(http_ratelimit_take(rl, "a", 0, &wait), 1);
  CHECK_INT(http_ratelimit_take(rl, "a", 0, &wait), 1);
  CHECK_INT(http_ratelimit_take(rl, "a", 0, &wait), 0);
  CHECK_INT(wait, 500);
  CHECK_INT(http_ratelimit_take(rl, "a", 499, &wait), 0);
  CHECK_INT(http_ratelimit_take(rl, "a", 500, &wait), 1);
  /* clients have their own buckets */
  CHECK_INT(http_ratelimit_take(rl, "b", 500, &wait), 1);
  /* a third client recycles the longest idle bucket; never refused for
   * want of a slot */
  CHECK_INT(http_ratelimit_take(rl, "c", 600, &wait), 1);
  CHECK_INT(http_ratelimit_take(rl, "c", 600, &wait), 1);
  CHECK_INT(http_ratelimit_take(rl, "c", 600, &wait), 0);
  http_ratelimit_free(rl);
}

static void test_keys(void) {
  char k[HTTP_IDEM_KEY_LEN + 1];
  CHECK_INT(http_idem_key_parse("8e03978e-40d5-43e8-bc93-6894a57f9324", k),
            CEB_OK);
  CHECK_STR(k, "8e03978e-40d5-43e8-bc93-6894a57f9324");
  CHECK_INT(
      http_idem_key_parse(" \"8E03978E-40D5-43E8-BC93-6894A57F9324\" ", k),
      CEB_OK);
  CHECK_STR(k, "8e03978e-40d5-43e8-bc93-6894a57f9324");
  static const char *const bad[] = {
      "",
      "8e03978e-40d5-13e8-bc93-6894a57f9324", /* version 1 */
      "8e03978e-40d5-43e8-cc93-6894a57f9324", /* variant 110x */
      "8e03978e40d5-43e8-bc93-6894a57f93240", /* dash misplaced */
      "8e03978e-40d5-43e8-bc93-6894a57f932",  /* short */
      "8e03978g-40d5-43e8-bc93-6894a57f9324", /* not hex */
      "\"8e03978e-40d5-43e8-bc93-6894a57f9324",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK_MSG(http_idem_key_parse(bad[i], k) == CEB_EINVAL, "%s", bad[i]);
}

static void fp(const char *path, const char *const *hdrs, const char *body,
               char out[HTTP_FINGERPRINT_LEN + 1]) {
  ceb_headers h = {0};
  for (size_t i = 0; hdrs[i]; i += 2)
    ceb_headers_add(&h, hdrs[i], hdrs[i + 1], strlen(hdrs[i + 1]));
  CHECK_INT(http_idem_fingerprint("POST", path, &h, body, strlen(body), out),
            CEB_OK);
  ceb_headers_clear(&h);
}

static void test_fingerprint(void) {
  char a[65], b[65];
  const char *const h1[] = {"Content-Type", "application/json", "ce-id", "1",
                            "ce-type", "t", "Authorization", "Bearer x",
                            NULL};
  const char *const h2[] = {"CE-Type", "t", "Authorization", "Bearer y",
                            "CE-ID", "1", "content-type", "application/json",
                            "Idempotency-Key", "k", NULL};
  fp("/events", h1, "{}", a);
  CHECK_INT(strlen(a), 64);
  fp("/events", h2, "{}", b);
  CHECK_STR(a, b); /* order, name case and non-ce headers do not matter */
  fp("/events", h1, "{ }", b);
  CHECK(strcmp(a, b) != 0);
  fp("/other", h1, "{}", b);
  CHECK(strcmp(a, b) != 0);
  const char *const h3[] = {"Content-Type", "application/json", "ce-id", "2",
                            "ce-type", "t", NULL};
  fp("/events", h3, "{}", b);
  CHECK(strcmp(a, b) != 0);
  const char *const h4[] = {"Content-Type", "text/plain", "ce-id", "1",
                            "ce-type", "t", NULL};
  fp("/events", h4, "{}", b);
  CHECK(strcmp(a, b) != 0);
  /* field boundaries are unambiguous */
  const char *const h5[] = {"ce-a", "bc", NULL}, *const h6[] = {"ce-ab", "c",
                                                                NULL};
  fp("/e", h5, "", a);
  fp("/e", h6, "", b);
  CHECK(strcmp(a, b) != 0);
}

static void test_patterns(void) {
  const char *p = "nl.edu.*|nl.duo.x | *.test";
  CHECK(http_pattern_match(p, "nl.edu.inschrijving"));
  CHECK(http_pattern_match(p, "nl.duo.x"));
  CHECK(http_pattern_match(p, "a.b.test"));
  CHECK(!http_pattern_match(p, "nl.duo.xy"));
  CHECK(!http_pattern_match(p, "nl.ed"));
  CHECK(!http_pattern_match(p, "test"));
  CHECK(http_pattern_match("*", "anything"));
  CHECK(!http_pattern_match("", "x"));
  CHECK(!http_pattern_match("||", "x"));
}

static void test_b64url(void) {
  static const unsigned char bin[] = {0xfb, 0xff, 0xfe, 0x00, 0x41};
  char *s = http_b64url_encode(bin, sizeof bin);
  CHECK_STR(s, "-__-AEE");
  unsigned char *out = NULL;
  size_t n = 0;
  CHECK_INT(http_b64url_decode(s, strlen(s), &out, &n), CEB_OK);
  CHECK(n == sizeof bin && memcmp(out, bin, n) == 0);
  free(out);
  free(s);
  CHECK_INT(http_b64url_decode("+/8", 3, &out, &n), CEB_EINVAL);
  CHECK_INT(http_b64url_decode("AA==", 4, &out, &n), CEB_EINVAL);
  CHECK_INT(http_b64url_decode("A", 1, &out, &n), CEB_EINVAL);
}

static void test_problem(void) {
  json_t *p = http_problem_new(422, "event.invalid", "bad");
  http_problem_add_error(p, 2, "time", "ce.time.invalid", "not RFC 3339");
  http_problem_add_error(p, -1, NULL, "x", "y");
  http_reply r = {0};
  CHECK_INT(http_reply_problem_json(&r, p), CEB_OK);
  json_decref(p);
  CHECK_INT(r.status, 422);
  CHECK_STR(r.content_type, "application/problem+json");
  json_t *j = json_loadb(r.body, r.len, 0, NULL);
  CHECK_STR(json_string_value(json_object_get(j, "type")),
            "urn:cebridge:problem:event.invalid");
  CHECK_STR(json_string_value(json_object_get(j, "title")),
            "Unprocessable Content");
  CHECK_INT(json_integer_value(json_object_get(j, "status")), 422);
  json_t *errs = json_object_get(j, "errors");
  CHECK_INT(json_array_size(errs), 2);
  json_t *e0 = json_array_get(errs, 0), *e1 = json_array_get(errs, 1);
  CHECK_INT(json_integer_value(json_object_get(e0, "index")), 2);
  CHECK_STR(json_string_value(json_object_get(e0, "attribute")), "time");
  CHECK(json_object_get(e1, "index") == NULL);
  CHECK(json_object_get(e1, "attribute") == NULL);
  json_decref(j);
  http_reply_clear(&r);
}

/* http_json_quote(s) must equal jansson's compact dump of the string */
static void check_quote_like_jansson(const char *s) {
  json_t *j = json_string(s);
  CHECK_MSG(j != NULL, "jansson refused %s", s);
  char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(j);
  size_t n = http_json_quote(NULL, s);
  char *got = malloc(n + 1);
  CHECK(got != NULL && want != NULL);
  if (!got || !want) {
    free(got);
    free(want);
    return;
  }
  CHECK_INT(http_json_quote(got, s), n);
  got[n] = '\0';
  CHECK_STR(got, want);
  free(got);
  free(want);
}

static void test_ack(void) {
  static const char *const ids[] = {
      "",
      "plain-id-0123",
      "quote\"back\\slash/solidus",
      "\x01\x1f\b\f\n\r\t\x7f",
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf",
      "\xed\x9f\xbf \xf4\x8f\xbf\xbf"};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
    check_quote_like_jansson(ids[i]);

  /* bytes jansson refuses (not UTF-8) become U+FFFD, one per byte */
  static const struct {
    const char *in, *want;
  } bad[] = {
      {"a\xff", "\"a\\ufffd\""},
      {"\xc0\xaf", "\"\\ufffd\\ufffd\""},         /* overlong */
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""}, /* surrogate */
      {"\xf4\x90\x80\x80x", "\"\\ufffd\\ufffd\\ufffd\\ufffdx\""},
      {"\xe2\x82", "\"\\ufffd\\ufffd\""}, /* cut short */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char out[64];
    size_t n = http_json_quote(NULL, bad[i].in);
    CHECK(n < sizeof out);
    if (n >= sizeof out) continue;
    CHECK_INT(http_json_quote(out, bad[i].in), n);
    out[n] = '\0';
    CHECK_STR(out, bad[i].want);
  }

  /* the whole body, against the jansson object it replaces */
  ceb_event *ev[3];
  static const char *const evid[] = {"e-1", "with \"quote\"", "\xc3\xa9t\xc3\xa9"};
  for (int i = 0; i < 3; i++) {
    ev[i] = ceb_event_new();
    CHECK(ev[i] != NULL && ceb_event_set(ev[i], "id", evid[i]) == CEB_OK);
  }
  for (size_t count = 1; count <= 3; count++) {
    size_t ids_len = 0, len = 0;
    char *text = http_ack_ids(ev, count, &ids_len);
    CHECK(text != NULL && strlen(text) == ids_len);
    char *body = text ? http_ack_body(count, count - 1, text, ids_len, &len)
                      : NULL;
    CHECK(body != NULL && strlen(body) == len);
    json_t *arr = json_array();
    for (size_t i = 0; i < count; i++)
      json_array_append_new(arr, json_string(evid[i]));
    json_t *j = json_pack("{s:s, s:I, s:I, s:o}", "status", "accepted",
                          "accepted", (json_int_t)count, "duplicates",
                          (json_int_t)(count - 1), "ids", arr);
    char *want = json_dumps(j, JSON_COMPACT);
    CHECK_STR(body ? body : "", want ? want : "?");
    free(want);
    json_decref(j);
    free(body);
    free(text);
  }
  for (int i = 0; i < 3; i++)
    ceb_event_unref(ev[i]);
  /* after a mapped submit the ids are the program's: no "ids" member */
  size_t len = 0;
  char *body = http_ack_body(2, 1, NULL, 0, &len);
  CHECK_STR(body ? body : "",
            "{\"status\":\"accepted\",\"accepted\":2,\"duplicates\":1}");
  CHECK(body && strlen(body) == len);
  free(body);
}

int main(void) {
  test_replay();
  test_ratelimit();
  test_keys();
  test_fingerprint();
  test_patterns();
  test_b64url();
  test_problem();
  test_ack();
  return ceb_test_done("unit_http_in_helpers");
}
