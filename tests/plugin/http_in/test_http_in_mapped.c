/* The intermediary with a mapping (ABI 1.2: ceb_instance_info.mapped): any
 * body is taken (no 415), each request goes to host->submit_mapped as its
 * input document (http_in_doc.h: lower-cased headers, no Authorization,
 * the query, the body parsed as JSON), a refused mapping is 400
 * mapping.failed with the program's error and nothing submitted, the 202
 * comes only once durable and has no ids; a mapped source with per-client
 * types is a config error. The fake host's C map function stands in for
 * the jq program (ceb_fake_map.h). Everything runs twice: against a 1.3
 * host (submit_mapped) and a 1.4 host (submit_mapped_async, a refusal
 * coming in the callback). */
#include "hin_harness.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_fake_map.h"

static const char *const JSON_HDRS[] = {
    "Content-Type: application/json", "X-Tag: a", "x-tag: b",
    "Authorization: Bearer not-for-you", NULL};
static const char *const TEXT_HDRS[] = {"Content-Type: text/plain", NULL};

static void test_plain_json(hin_env *e) {
  size_t before = ceb_fake_event_count(e->fake);
  char url[256];
  snprintf(url, sizeof url, "%s?page=2&tag=x&tag=y", e->url);
  const char *body = "{\"id\":\"plain-1\",\"student\":42}";
  hin_resp r = hin_request(url, NULL, JSON_HDRS, body, strlen(body), 0);
  CHECK_INT(r.status, 202);
  CHECK_STR(r.body ? r.body : "",
            "{\"status\":\"accepted\",\"accepted\":1,\"duplicates\":0}");
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), before + 1);
  ceb_event *ev = ceb_fake_event(e->fake, before);
  CHECK(ev && strcmp(ceb_event_get(ev, "id"), "plain-1") == 0);
  ceb_event_unref(ev);
  char *doc = ceb_fake_doc(e->fake, ceb_fake_doc_count(e->fake) - 1);
  json_t *j = doc ? json_loads(doc, 0, NULL) : NULL;
  CHECK(j != NULL);
  CHECK_STR(json_string_value(json_object_get(j, "method")), "POST");
  CHECK_STR(json_string_value(json_object_get(j, "path")), "/events");
  json_t *q = json_object_get(j, "query");
  CHECK_STR(json_string_value(json_object_get(q, "page")), "2");
  CHECK_INT(json_array_size(json_object_get(q, "tag")), 2);
  json_t *h = json_object_get(j, "headers");
  CHECK_STR(json_string_value(json_object_get(h, "x-tag")), "a, b");
  CHECK_STR(json_string_value(json_object_get(h, "content-type")),
            "application/json");
  CHECK(json_object_get(h, "authorization") == NULL);
  CHECK(doc && !strstr(doc, "not-for-you"));
  CHECK(json_is_null(json_object_get(j, "client")));
  CHECK_INT(json_integer_value(
                json_object_get(json_object_get(j, "body"), "student")),
            42);
  CHECK_STR(json_string_value(json_object_get(j, "body_encoding")), "json");
  json_decref(j);
  free(doc);
}

/* Not a CloudEvent and not JSON: the program's to judge, not 415. */
static void test_text(hin_env *e) {
  size_t before = ceb_fake_event_count(e->fake);
  hin_resp r = hin_post(e, TEXT_HDRS, "temperature=21.5");
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), before + 1);
  char *doc = ceb_fake_doc(e->fake, ceb_fake_doc_count(e->fake) - 1);
  CHECK(doc && strstr(doc, "\"body\":\"temperature=21.5\","
                           "\"body_encoding\":\"text\""));
  free(doc);
}

/* The program refuses: 400 problem+json with its error, nothing taken. */
static void test_refused(hin_env *e) {
  size_t before = ceb_fake_event_count(e->fake);
  hin_resp r = hin_post(e, JSON_HDRS, "{\"fail\":\"no student in it\"}");
  CHECK_INT(r.status, 400);
  char ct[128];
  CHECK_STR(hin_header(&r, "Content-Type", ct, sizeof ct),
            "application/problem+json");
  CHECK(hin_json_str(&r, "code", "mapping.failed"));
  CHECK(
      hin_json_str(&r, "detail", "mapping: no student in it"));
  hin_resp_free(&r);
  /* a batch of which one fails is refused whole */
  r = hin_post(e, JSON_HDRS, "[{\"id\":\"ok-1\"},{\"fail\":\"second\"}]");
  CHECK_INT(r.status, 400);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), before);
}

/* A batch the program makes of one request: one submit, durable first. */
static void test_batch(hin_env *e) {
  size_t before = ceb_fake_event_count(e->fake);
  e->fake->mode = CEB_FAKE_COMMIT_HOLD;
  hin_async *a =
      hin_post_async(e, JSON_HDRS, "[{\"id\":\"b-1\"},{\"id\":\"b-2\"}]");
  CHECK(ceb_fake_wait_events(e->fake, before + 2, 10000));
  CHECK(!atomic_load(&a->done)); /* no answer before durability */
  ceb_fake_commit(e->fake, CEB_OK);
  CHECK(hin_async_wait(a, 10000));
  hin_resp r;
  hin_async_free(a, &r);
  CHECK_INT(r.status, 202);
  CHECK(r.body && strstr(r.body, "\"accepted\":2"));
  hin_resp_free(&r);
  e->fake->mode = CEB_FAKE_COMMIT_NOW;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  hin_mapped = 1;
  const char *cfg[] = {"auth=none", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    ceb_fake_set_map(e->fake, ceb_fake_map_payload, "body");
    /* a 1.3 host: submit_mapped holds the listener thread */
    test_plain_json(e);
    test_text(e);
    test_refused(e);
    test_batch(e);
    CHECK_INT(ceb_fake_mapped_async(e->fake), 0);
    /* a 1.4 host: submit_mapped_async, the refusals in the callback */
    ceb_fake_host_async_mapping(e->fake);
    test_plain_json(e);
    test_text(e);
    test_refused(e);
    test_batch(e);
    CHECK_INT(ceb_fake_mapped_async(e->fake), 5);
    hin_stop(e);
  }
  /* per-client types cannot be checked on events the host makes */
  hin_issuer *issuer = hin_issuer_new();
  char *dir = ceb_test_tmpdir("http_in_mapped");
  char jwks[512], jwks_entry[600];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", dir);
  snprintf(jwks_entry, sizeof jwks_entry, "oauth2.jwks_file=%s", jwks);
  CHECK_INT(hin_issuer_write_jwks(issuer, jwks, "RS256", 0), CEB_OK);
  const char *typed[] = {jwks_entry, "oauth2.audience=cebridge",
                         "clients.partner-a.types=nl.edu.*", NULL};
  CHECK_INT(hin_init_status(typed), CEB_ECONFIG);
  hin_mapped = 0;
  CHECK_INT(hin_init_status(typed), CEB_OK);
  hin_issuer_free(issuer);
  free(dir);
  return ceb_test_done("test_http_in_mapped");
}
