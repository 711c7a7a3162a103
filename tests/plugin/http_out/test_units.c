/* The sink's pure helpers: status classification, Retry-After parsing,
 * URL templates, and the OAuth2 token cache (response parsing, expiry with
 * margin, invalidation by generation, form encoding of the request). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "http_out_classify.h"
#include "http_out_int.h"
#include "http_oauth.h"

static void test_classify(void) {
  static const struct {
    long status;
    ceb_outcome outcome;
    unsigned flags;
  } table[] = {
      {200, CEB_ACK, 0},    {201, CEB_ACK, 0},
      {202, CEB_ACK, 0},    {204, CEB_ACK, 0},
      {299, CEB_ACK, 0},    {301, CEB_REJECT, 0},
      {304, CEB_REJECT, 0}, {400, CEB_REJECT, 0},
      {401, CEB_REJECT, 0}, {403, CEB_REJECT, 0},
      {404, CEB_REJECT, 0}, {408, CEB_RETRY, 0},
      {409, CEB_RETRY, 0},  {413, CEB_REJECT, 0},
      {422, CEB_REJECT, 0}, {425, CEB_RETRY, 0},
      {429, CEB_RETRY, 0},  {500, CEB_RETRY, 0},
      {501, CEB_RETRY, 0},  {503, CEB_RETRY, 0},
      {599, CEB_RETRY, 0},  {410, CEB_REJECT, CEB_SETTLE_OPEN_CIRCUIT},
  };
  for (size_t i = 0; i < sizeof(table) / sizeof(*table); i++) {
    ceb_settle_info info = {sizeof(info)};
    char reason[16];
    http_sink_classify(table[i].status, "12", NULL, 0, &info, reason,
                       sizeof(reason));
    CHECK_MSG(info.outcome == table[i].outcome, "status %ld", table[i].status);
    CHECK_MSG(info.flags == table[i].flags, "status %ld", table[i].status);
    CHECK_INT(info.status_code, table[i].status);
    char want[16];
    snprintf(want, sizeof(want), "http.%ld", table[i].status);
    CHECK_STR(info.reason, want);
    /* Retry-After only matters for a retry */
    CHECK_INT(info.retry_after_ms, table[i].outcome == CEB_RETRY ? 12000 : -1);
  }
}

/* 409 by what the receiver's problem says: cebridge's own intermediary
 * (http_in_request.c) and the names other receivers use. */
static void test_classify_409(void) {
  static const struct {
    const char *body;
    ceb_outcome outcome;
  } table[] = {
      /* cebridge: the webhook-id was accepted before -> delivered */
      {"{\"type\":\"urn:cebridge:problem:webhook.replayed\",\"title\":"
       "\"Conflict\",\"status\":409,\"detail\":\"this webhook-id was "
       "already accepted\",\"code\":\"webhook.replayed\"}",
       CEB_ACK},
      /* cebridge: the same Idempotency-Key is still being processed */
      {"{\"type\":\"urn:cebridge:problem:idempotency.in_flight\","
       "\"status\":409,\"code\":\"idempotency.in_flight\"}",
       CEB_RETRY},
      {"{\"type\":\"https://example.org/problems/already-processed\"}",
       CEB_ACK},
      {"{\"type\":\"about:blank\",\"code\":\"DUPLICATE_EVENT\"}", CEB_ACK},
      {"{\"type\":\"https://example.org/idempotency#request-in-progress\"}",
       CEB_RETRY},
      {"{\"type\":\"https://example.org/p/concurrent-request\"}", CEB_RETRY},
      /* unknown meaning, no problem, not JSON, truncated: retried */
      {"{\"type\":\"https://example.org/p/version-conflict\"}", CEB_RETRY},
      {"{\"type\":\"about:blank\",\"title\":\"Conflict\"}", CEB_RETRY},
      {"conflict: already_processed", CEB_RETRY},
      {"{\"type\":\"urn:x:already_processed", CEB_RETRY},
      {"", CEB_RETRY},
      {NULL, CEB_RETRY},
  };
  for (size_t i = 0; i < sizeof(table) / sizeof(*table); i++) {
    ceb_settle_info info = {sizeof(info)};
    char reason[16];
    http_sink_classify(409, "1", table[i].body, 0, &info, reason,
                       sizeof(reason));
    CHECK_MSG(info.outcome == table[i].outcome, "409 body %s",
              table[i].body ? table[i].body : "(null)");
    CHECK_STR(info.reason, "http.409");
    CHECK_INT(info.status_code, 409);
    CHECK_INT(info.flags, 0);
    CHECK_INT(info.retry_after_ms, info.outcome == CEB_RETRY ? 1000 : -1);
  }
  CHECK_INT(http_sink_conflict_kind("{\"code\":\"idempotency.in_flight\"}"),
            HTTP_SINK_409_IN_FLIGHT);
  CHECK_INT(http_sink_conflict_kind("{\"code\":\"webhook.replayed\"}"),
            HTTP_SINK_409_PROCESSED);
  CHECK_INT(http_sink_conflict_kind("[1]"), HTTP_SINK_409_UNKNOWN);
}

static void test_retry_after(void) {
  int64_t now = 1784736000000LL; /* 2026-07-22T16:00:00Z */
  CHECK_INT(http_sink_retry_after_ms(NULL, now), -1);
  CHECK_INT(http_sink_retry_after_ms("", now), -1);
  CHECK_INT(http_sink_retry_after_ms("0", now), 0);
  CHECK_INT(http_sink_retry_after_ms("7", now), 7000);
  CHECK_INT(http_sink_retry_after_ms(" 120 ", now), 120000);
  CHECK_INT(http_sink_retry_after_ms("7s", now), -1);
  CHECK_INT(http_sink_retry_after_ms("-5", now), -1);
  CHECK_INT(http_sink_retry_after_ms("99999999999999999999", now), -1);
  CHECK_INT(http_sink_retry_after_ms("soon", now), -1);
  /* IMF-fixdate, RFC 850 and asctime forms, 90 s ahead */
  CHECK_INT(http_sink_retry_after_ms("Wed, 22 Jul 2026 16:01:30 GMT", now),
            90000);
  CHECK_INT(http_sink_retry_after_ms("Wednesday, 22-Jul-26 16:01:30 GMT", now),
            90000);
  CHECK_INT(http_sink_retry_after_ms("Wed Jul 22 16:01:30 2026", now), 90000);
  /* a date in the past means "now" */
  CHECK_INT(http_sink_retry_after_ms("Wed, 22 Jul 2026 15:00:00 GMT", now), 0);
}

static void test_url_template(void) {
  int t = -1;
  CHECK_INT(http_sink_url_check("https://x/a", &t), CEB_OK);
  CHECK_INT(t, 0);
  CHECK_INT(http_sink_url_check("https://x/${subject}/${type}", &t), CEB_OK);
  CHECK_INT(t, 1);
  CHECK_INT(http_sink_url_check("https://x/${}", &t), CEB_EINVAL);
  CHECK_INT(http_sink_url_check("https://x/${Subject}", &t), CEB_EINVAL);
  CHECK_INT(http_sink_url_check("https://x/${subject", &t), CEB_EINVAL);
  CHECK_INT(http_sink_url_check("https://x/$subject", &t), CEB_OK);
  CHECK_INT(t, 0);
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "subject", "a b/c?d&é");
  ceb_event_set(ev, "type", "nl.edu.x");
  char *out = NULL;
  CHECK_INT(
      http_sink_url_expand("https://x/${type}/s/${subject}?q=1", ev, &out),
      CEB_OK);
  CHECK_STR(out, "https://x/nl.edu.x/s/a%20b%2Fc%3Fd%26%C3%A9?q=1");
  free(out);
  out = NULL;
  CHECK_INT(http_sink_url_expand("https://x/${partitionkey}", ev, &out),
            CEB_ENOTFOUND);
  CHECK(out == NULL);
  ceb_event_unref(ev);
}

static http_oauth_client *client(int64_t margin_ms) {
  http_oauth_config cfg = {.token_url = "https://idp/token",
                           .client_id = "id 1",
                           .client_secret = "p&ss=word",
                           .scope = "a b",
                           .refresh_margin_ms = margin_ms};
  http_oauth_client *c = NULL;
  char err[160];
  CHECK_INT(http_oauth_client_new(&cfg, &c, err, sizeof(err)), CEB_OK);
  return c;
}

static int complete(http_oauth_client *c, long status, const char *body,
                    int64_t now) {
  char err[160] = "";
  return http_oauth_client_complete(c, status, body, strlen(body), now, err,
                                    sizeof(err));
}

static void test_oauth_cache(void) {
  http_oauth_client *c = client(60000);
  if (!c) return;
  uint64_t gen = 0;
  CHECK(http_oauth_client_token(c, 0, &gen) == NULL);
  char *form = NULL;
  const char *user = NULL, *pass = NULL;
  CHECK_INT(http_oauth_client_request(c, 0, &form, &user, &pass), CEB_OK);
  CHECK_STR(form, "grant_type=client_credentials&scope=a+b");
  CHECK_STR(user, "id+1");
  CHECK_STR(pass, "p%26ss%3Dword");
  free(form);

  int64_t t = 1000000;
  CHECK_INT(complete(c, 200,
                     "{\"access_token\":\"T1\",\"token_type\":\"bearer\","
                     "\"expires_in\":300}",
                     t),
            CEB_OK);
  CHECK_STR(http_oauth_client_token(c, t, &gen), "T1");
  /* valid until expiry minus the 60 s margin */
  CHECK(http_oauth_client_token(c, t + 239999, NULL) != NULL);
  CHECK(http_oauth_client_token(c, t + 240000, NULL) == NULL);
  uint64_t g1 = gen;
  /* a short life caps the margin at half of it */
  CHECK_INT(complete(c, 200, "{\"access_token\":\"T2\",\"expires_in\":10}", t),
            CEB_OK);
  CHECK(http_oauth_client_token(c, t + 4999, &gen) != NULL);
  CHECK(http_oauth_client_token(c, t + 5000, NULL) == NULL);
  CHECK(gen != g1);
  /* invalidating an older generation keeps the newer token */
  http_oauth_client_invalidate(c, g1);
  CHECK_STR(http_oauth_client_token(c, t, NULL), "T2");
  http_oauth_client_invalidate(c, gen);
  CHECK(http_oauth_client_token(c, t, NULL) == NULL);
  /* refusals and malformed answers keep no token */
  CHECK_INT(complete(c, 401, "{\"error\":\"invalid_client\"}", t), CEB_EAUTH);
  CHECK_INT(complete(c, 503, "busy", t), CEB_EIO);
  CHECK_INT(complete(c, 200, "not json", t), CEB_EIO);
  CHECK_INT(complete(c, 200, "{\"token_type\":\"bearer\"}", t), CEB_EIO);
  CHECK_INT(complete(c, 200, "{\"access_token\":\"a b\"}", t), CEB_EIO);
  CHECK_INT(
      complete(c, 200, "{\"access_token\":\"X\",\"token_type\":\"mac\"}", t),
      CEB_EIO);
  CHECK(http_oauth_client_token(c, t, NULL) == NULL);
  /* no expires_in: a short default life rather than forever */
  CHECK_INT(complete(c, 200, "{\"access_token\":\"T3\"}", t), CEB_OK);
  CHECK(http_oauth_client_token(c, t + 3600000, NULL) == NULL);
  http_oauth_client_free(c);

  http_oauth_config bad = {.token_url = "https://idp/token"};
  http_oauth_client *none = NULL;
  char err[160];
  CHECK_INT(http_oauth_client_new(&bad, &none, err, sizeof(err)), CEB_ECONFIG);
  CHECK(none == NULL);
}

int main(void) {
  test_classify();
  test_classify_409();
  test_retry_after();
  test_url_template();
  test_oauth_cache();
  return ceb_test_done("plugin_http_out_units");
}
