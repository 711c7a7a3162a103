/* HTTP, Kafka and MQTT bindings: header mapping, percent-encoding, data
 * kinds, structured mode, bad input, and lossless round trips. */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

static const char k_full[] =
    "{\"specversion\":\"1.0\",\"id\":\"id 1\",\"source\":\"/a b\","
    "\"type\":\"nl.x.y\",\"datacontenttype\":\"application/json\","
    "\"dataschema\":\"https://x.example/s\",\"subject\":\"\xe2\x82\xac 5 "
    "\\\"q\\\" 100%\","
    "\"time\":\"2020-01-01T00:00:00Z\",\"partitionkey\":\"k1\","
    "\"zext\":\"v\",\"data\":{\"a\":[1,2]}}";

static ceb_event *from_json(const char *json) {
  ceb_event *ev = NULL;
  ceb_error err;
  int rc = ceb_json_decode(json, strlen(json), &ev, &err);
  CHECK_MSG(rc == CEB_OK, "%s", err.message);
  return ev;
}

static char *to_json(const ceb_event *ev) {
  char *out = NULL;
  size_t len;
  CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_OK);
  return out;
}

static void check_same_json(const ceb_event *ev, const char *want) {
  char *got = to_json(ev);
  CHECK_STR(got, want);
  ceb_free(got);
}

static void test_http_binary_decode(void) {
  ceb_headers h = {0};
  ceb_headers_add(&h, "CE-SpecVersion", "1.0", 3);
  ceb_headers_add(&h, "ce-id", "1", 1);
  ceb_headers_add(&h, "ce-source", "%2Fmy%20context", 15);
  ceb_headers_add(&h, "ce-type", "t", 1);
  ceb_headers_add(&h, "ce-datacontenttype", "ignored/type", 12);
  ceb_headers_add(&h, "ce-MyExt", "%E2%82%AC", 9);
  ceb_headers_add(&h, "Content-Type", "text/plain; charset=utf-8", 25);
  ceb_headers_add(&h, "Host", "example.com", 11);
  ceb_event *ev = NULL;
  ceb_error err;
  CHECK_INT(ceb_http_decode(&h, "hello", 5, &ev, &err), CEB_OK);
  CHECK_STR(ceb_event_get(ev, "source"), "/my context");
  CHECK_STR(ceb_event_get(ev, "myext"), "\xe2\x82\xac");
  CHECK_STR(ceb_event_get(ev, "datacontenttype"), "text/plain; charset=utf-8");
  CHECK(ceb_event_get(ev, "host") == NULL);
  CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_TEXT);
  ceb_event_unref(ev);

  /* data kinds chosen from the content type and the body */
  struct {
    const char *ct, *body;
    ceb_data_kind kind;
  } kinds[] = {
      {"application/json", "{\"a\":1}", CEB_DATA_JSON},
      {"application/json", "{not json", CEB_DATA_BINARY},
      {"application/xml", "<a/>", CEB_DATA_TEXT},
      {"text/plain", "\xff\xfe", CEB_DATA_BINARY},
      {"application/octet-stream", "abc", CEB_DATA_BINARY},
      {NULL, "abc", CEB_DATA_BINARY},
      {"application/json", "", CEB_DATA_NONE},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    ceb_headers k = {0};
    ceb_headers_add(&k, "ce-id", "1", 1);
    if (kinds[i].ct)
      ceb_headers_add(&k, "content-type", kinds[i].ct, strlen(kinds[i].ct));
    CHECK_INT(
        ceb_http_decode(&k, kinds[i].body, strlen(kinds[i].body), &ev, &err),
        CEB_OK);
    CHECK_MSG(ceb_event_data_kind(ev) == kinds[i].kind, "case %zu", i);
    ceb_event_unref(ev);
    ceb_headers_clear(&k);
  }

  /* JSON bodies: checked once at decode; a body without duplicate names
   * is kept as sent and spliced into the JSON format as is; one with
   * duplicates is still JSON data, re-serialised (last member wins) so that
   * the journal holds what strict readers accept */
  struct {
    const char *body, *json_data;
  } bodies[] = {
      {" {\"a\": [1, 2.50]}\n", "\"data\": {\"a\": [1, 2.50]}\n}"},
      {"{\"a\":1,\"a\":2}", "\"data\":{\"a\":2}}"},
  };
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
    ceb_headers k = {0};
    ceb_headers_add(&k, "ce-id", "1", 1);
    ceb_headers_add(&k, "content-type", "application/json", 16);
    CHECK_INT(
        ceb_http_decode(&k, bodies[i].body, strlen(bodies[i].body), &ev, &err),
        CEB_OK);
    CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_JSON);
    char *out = NULL;
    size_t n = 0;
    CHECK_INT(ceb_json_encode(ev, &out, &n), CEB_OK);
    CHECK_MSG(out && strstr(out, bodies[i].json_data) != NULL, "case %zu: %s",
              i, out ? out : "(null)");
    ceb_event *back = NULL;
    CHECK_INT(ceb_json_decode(out, n, &back, &err), CEB_OK);
    ceb_event_unref(back);
    ceb_free(out);
    ceb_event_unref(ev);
    ceb_headers_clear(&k);
  }

  /* bad input */
  struct {
    const char *name, *value, *code;
  } bad[] = {
      {"ce-id", "%zz", "binding.header.percent"},
      {"ce-id", "%C3", "binding.header.percent"},
      {"ce-id", "a%00b", "binding.header.percent"},
      {"ce-", "x", "binding.header.name"},
      {"ce-specversion", "0.3", "ce.specversion.unsupported"},
      {"ce-source", "\xff", "binding.header.value"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ceb_headers b = {0};
    ceb_headers_add(&b, bad[i].name, bad[i].value, strlen(bad[i].value));
    ev = (ceb_event *)1;
    CHECK_INT(ceb_http_decode(&b, NULL, 0, &ev, &err), CEB_EINVAL);
    CHECK(ev == NULL);
    CHECK_STR(err.code, bad[i].code);
    ceb_headers_clear(&b);
  }
  ceb_headers d = {0};
  ceb_headers_add(&d, "ce-id", "1", 1);
  ceb_headers_add(&d, "CE-ID", "2", 1);
  CHECK_INT(ceb_http_decode(&d, NULL, 0, &ev, &err), CEB_EINVAL);
  CHECK_STR(err.code, "binding.header.duplicate");
  ceb_headers_clear(&d);
  ceb_headers_add(&d, "ce-id", "a\0b", 3);
  CHECK_INT(ceb_http_decode(&d, NULL, 0, &ev, &err), CEB_EINVAL);
  CHECK_STR(err.code, "binding.header.value");
  ceb_headers_clear(&d);
  /* a huge header value */
  size_t n = CEB_ATTR_VALUE_MAX + 1;
  char *big = malloc(n + 1);
  memset(big, 'a', n);
  big[n] = '\0';
  ceb_headers_add(&d, "ce-subject", big, n);
  CHECK_INT(ceb_http_decode(&d, NULL, 0, &ev, &err), CEB_EINVAL);
  CHECK_STR(err.code, "ce.attr.too_long");
  free(big);
  ceb_headers_clear(&d);
  ceb_headers_add(&d, "content-type", "application/cloudevents-batch+json", 34);
  CHECK_INT(ceb_http_decode(&d, "[]", 2, &ev, &err), CEB_EINVAL);
  CHECK_STR(err.code, "http.batch");
  ceb_headers_clear(&d);
  ceb_headers_clear(&h);
}

static void test_http_encode(void) {
  ceb_event *ev = from_json(k_full);
  ceb_headers h = {0};
  char *body = NULL;
  size_t len;
  CHECK_INT(ceb_http_encode(ev, CEB_MODE_BINARY, &h, &body, &len), CEB_OK);
  CHECK_STR(ceb_headers_get(&h, "ce-source"), "/a%20b");
  CHECK_STR(ceb_headers_get(&h, "ce-subject"),
            "%E2%82%AC%205%20%22q%22%20100%25");
  CHECK_STR(ceb_headers_get(&h, "ce-id"), "id%201");
  CHECK_STR(ceb_headers_get(&h, "content-type"), "application/json");
  CHECK(ceb_headers_get(&h, "ce-datacontenttype") == NULL);
  CHECK_INT(len, 11);
  CHECK_STR(body, "{\"a\":[1,2]}");

  /* JSON -> HTTP binary -> JSON */
  ceb_event *back = NULL;
  ceb_error err;
  CHECK_INT(ceb_http_decode(&h, body, len, &back, &err), CEB_OK);
  check_same_json(back, k_full);
  ceb_event_unref(back);
  ceb_free(body);
  ceb_headers_clear(&h);

  /* JSON -> HTTP structured -> JSON */
  CHECK_INT(ceb_http_encode(ev, CEB_MODE_STRUCTURED, &h, &body, &len), CEB_OK);
  CHECK_STR(ceb_headers_get(&h, "content-type"),
            "application/cloudevents+json");
  CHECK_INT(ceb_http_decode(&h, body, len, &back, &err), CEB_OK);
  check_same_json(back, k_full);
  ceb_event_unref(back);
  ceb_free(body);
  ceb_headers_clear(&h);
  CHECK_INT(ceb_http_encode(ev, CEB_MODE_BATCH, &h, &body, &len), CEB_EINVAL);
  CHECK_INT(h.count, 0);
  ceb_event_unref(ev);

  /* no data: no body, no content type */
  ev = from_json("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/\","
                 "\"type\":\"t\"}");
  CHECK_INT(ceb_http_encode(ev, CEB_MODE_BINARY, &h, &body, &len), CEB_OK);
  CHECK(body == NULL && len == 0);
  CHECK(ceb_headers_get(&h, "content-type") == NULL);
  CHECK_INT(h.count, 4);
  ceb_headers_clear(&h);
  ceb_event_unref(ev);
}

/* Text and binary data survive binary mode; JSON data without a
 * datacontenttype gains an explicit application/json (spec example 5). */
static void test_round_trip_kinds(void) {
  static const char *const cases[][2] = {
      {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/\",\"type\":\"t\","
       "\"datacontenttype\":\"text/xml\",\"data\":\"<a b=\\\"c\\\"/>\"}",
       NULL},
      {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/\",\"type\":\"t\","
       "\"datacontenttype\":\"application/octet-stream\","
       "\"data_base64\":\"AAECAw==\"}",
       NULL},
      {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/\",\"type\":\"t\","
       "\"data_base64\":\"AAECAw==\"}",
       NULL},
      {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/\",\"type\":\"t\","
       "\"data\":\"s\"}",
       "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/\",\"type\":\"t\","
       "\"datacontenttype\":\"application/json\",\"data\":\"s\"}"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *want = cases[i][1] ? cases[i][1] : cases[i][0];
    ceb_event *ev = from_json(cases[i][0]);
    ceb_headers h = {0};
    char *body;
    size_t len;
    ceb_error err;
    ceb_event *back = NULL;
    CHECK_INT(ceb_http_encode(ev, CEB_MODE_BINARY, &h, &body, &len), CEB_OK);
    CHECK_INT(ceb_http_decode(&h, body, len, &back, &err), CEB_OK);
    check_same_json(back, want);
    ceb_event_unref(back);
    ceb_free(body);
    ceb_headers_clear(&h);

    char *key, *value, *ct;
    size_t klen;
    CHECK_INT(ceb_kafka_encode(ev, CEB_MODE_BINARY, NULL, &h, &key, &klen,
                               &value, &len),
              CEB_OK);
    CHECK_INT(ceb_kafka_decode(&h, key, klen, value, len, &back, &err), CEB_OK);
    check_same_json(back, want);
    ceb_event_unref(back);
    ceb_free(key);
    ceb_free(value);
    ceb_headers_clear(&h);

    CHECK_INT(ceb_mqtt_encode(ev, 5, CEB_MODE_BINARY, &h, &ct, &value, &len),
              CEB_OK);
    CHECK_INT(ceb_mqtt_decode(5, &h, ct, value, len, &back, &err), CEB_OK);
    check_same_json(back, want);
    ceb_event_unref(back);
    ceb_free(ct);
    ceb_free(value);
    ceb_headers_clear(&h);
    ceb_event_unref(ev);
  }
}

static void test_kafka(void) {
  ceb_event *ev = from_json(k_full);
  ceb_headers h = {0};
  char *key, *value;
  size_t klen, len;
  ceb_error err;
  ceb_event *back;
  CHECK_INT(ceb_kafka_encode(ev, CEB_MODE_BINARY, NULL, &h, &key, &klen, &value,
                             &len),
            CEB_OK);
  CHECK_STR(key, "k1");
  CHECK_INT(klen, 2);
  CHECK_STR(ceb_headers_get(&h, "ce_source"), "/a b"); /* not percent-encoded */
  CHECK_STR(ceb_headers_get(&h, "content-type"), "application/json");
  CHECK(ceb_headers_get(&h, "ce_datacontenttype") == NULL);
  CHECK_INT(ceb_kafka_decode(&h, key, klen, value, len, &back, &err), CEB_OK);
  check_same_json(back, k_full);
  ceb_event_unref(back);
  ceb_free(key);
  ceb_free(value);
  ceb_headers_clear(&h);

  CHECK_INT(ceb_kafka_encode(ev, CEB_MODE_STRUCTURED, "subject", &h, &key,
                             &klen, &value, &len),
            CEB_OK);
  CHECK_STR(key, "\xe2\x82\xac 5 \"q\" 100%");
  CHECK_STR(ceb_headers_get(&h, "content-type"),
            "application/cloudevents+json");
  CHECK_INT(ceb_kafka_decode(&h, key, klen, value, len, &back, &err), CEB_OK);
  check_same_json(back, k_full);
  ceb_event_unref(back);
  ceb_free(key);
  ceb_free(value);
  ceb_headers_clear(&h);

  CHECK_INT(ceb_kafka_encode(ev, CEB_MODE_BINARY, "nothere", &h, &key, &klen,
                             &value, &len),
            CEB_OK);
  CHECK(key == NULL && klen == 0);
  ceb_free(value);
  ceb_headers_clear(&h);
  CHECK_INT(
      ceb_kafka_encode(ev, CEB_MODE_BATCH, NULL, &h, &key, &klen, &value, &len),
      CEB_EINVAL);
  ceb_event_unref(ev);

  /* key -> partitionkey only when absent and textual */
  ceb_headers_add(&h, "ce_specversion", "1.0", 3);
  ceb_headers_add(&h, "ce_id", "1", 1);
  CHECK_INT(ceb_kafka_decode(&h, "rk", 2, NULL, 0, &back, &err), CEB_OK);
  CHECK_STR(ceb_event_get(back, "partitionkey"), "rk");
  ceb_event_unref(back);
  CHECK_INT(ceb_kafka_decode(&h, "\xff\x00", 2, NULL, 0, &back, &err), CEB_OK);
  CHECK(ceb_event_get(back, "partitionkey") == NULL);
  ceb_event_unref(back);
  ceb_headers_add(&h, "ce_partitionkey", "hk", 2);
  CHECK_INT(ceb_kafka_decode(&h, "rk", 2, NULL, 0, &back, &err), CEB_OK);
  CHECK_STR(ceb_event_get(back, "partitionkey"), "hk");
  ceb_event_unref(back);
  ceb_headers_add(&h, "ce_id", "2", 1);
  CHECK_INT(ceb_kafka_decode(&h, NULL, 0, NULL, 0, &back, &err), CEB_EINVAL);
  CHECK_STR(err.code, "binding.header.duplicate");
  ceb_headers_clear(&h);
  ceb_headers_add(&h, "content-type", "application/cloudevents+json", 28);
  CHECK_INT(ceb_kafka_decode(&h, NULL, 0, "{bad", 4, &back, &err), CEB_EINVAL);
  CHECK_STR(err.code, "ce.json.malformed");
  ceb_headers_clear(&h);
}

static void test_mqtt(void) {
  ceb_event *ev = from_json(k_full);
  ceb_headers h = {0};
  char *ct, *payload;
  size_t len;
  ceb_error err;
  ceb_event *back;
  CHECK_INT(ceb_mqtt_encode(ev, 5, CEB_MODE_BINARY, &h, &ct, &payload, &len),
            CEB_OK);
  CHECK_STR(ct, "application/json");
  CHECK_STR(ceb_headers_get(&h, "specversion"), "1.0");
  CHECK_STR(ceb_headers_get(&h, "source"), "/a b");
  CHECK(ceb_headers_get(&h, "datacontenttype") == NULL);
  CHECK_INT(ceb_mqtt_decode(5, &h, ct, payload, len, &back, &err), CEB_OK);
  check_same_json(back, k_full);
  ceb_event_unref(back);
  ceb_free(ct);
  ceb_free(payload);
  ceb_headers_clear(&h);

  CHECK_INT(
      ceb_mqtt_encode(ev, 5, CEB_MODE_STRUCTURED, &h, &ct, &payload, &len),
      CEB_OK);
  CHECK_STR(ct, "application/cloudevents+json");
  CHECK_INT(h.count, 0);
  CHECK_INT(ceb_mqtt_decode(5, &h, ct, payload, len, &back, &err), CEB_OK);
  check_same_json(back, k_full);
  ceb_event_unref(back);
  ceb_free(ct);
  ceb_free(payload);

  CHECK_INT(
      ceb_mqtt_encode(ev, 4, CEB_MODE_STRUCTURED, NULL, &ct, &payload, &len),
      CEB_OK);
  CHECK(ct == NULL);
  CHECK_INT(ceb_mqtt_decode(4, NULL, NULL, payload, len, &back, &err), CEB_OK);
  check_same_json(back, k_full);
  ceb_event_unref(back);
  ceb_free(payload);
  CHECK_INT(ceb_mqtt_encode(ev, 4, CEB_MODE_BINARY, &h, &ct, &payload, &len),
            CEB_EINVAL);
  CHECK_INT(
      ceb_mqtt_encode(ev, 3, CEB_MODE_STRUCTURED, &h, &ct, &payload, &len),
      CEB_EINVAL);
  CHECK_INT(ceb_mqtt_decode(6, NULL, NULL, "{}", 2, &back, &err), CEB_EINVAL);
  CHECK_STR(err.code, "mqtt.version");
  /* 3.1.1 is structured only: a non-JSON payload is an error */
  CHECK_INT(ceb_mqtt_decode(4, NULL, NULL, "raw", 3, &back, &err), CEB_EINVAL);
  ceb_event_unref(ev);
}

/* 1 when ev (consumed) breaks the String rule on `attr`: each binding
 * decodes such a value as it is and leaves the one validator to refuse it. */
static int string_refused(ceb_event *ev, const char *attr) {
  if (!ev) return 0;
  ceb_violations v;
  int hit = 0;
  if (ceb_event_validate(ev, NULL, &v) > 0)
    for (size_t i = 0; i < v.count; i++)
      hit |= !strcmp(v.items[i].code, "ce.attr.string") &&
             !strcmp(v.items[i].attribute, attr);
  ceb_event_unref(ev);
  return hit;
}

static void base_headers(ceb_headers *h, const char *prefix) {
  static const char *const names[] = {"specversion", "id", "source", "type"};
  static const char *const values[] = {"1.0", "1", "urn:t", "nl.x.y"};
  for (size_t i = 0; i < 4; i++) {
    char n[32];
    snprintf(n, sizeof n, "%s%s", prefix, names[i]);
    ceb_headers_add(h, n, values[i], strlen(values[i]));
  }
}

/* The CloudEvents String rule and the bindings: a control character that
 * arrives percent-encoded (HTTP), raw in a header or user property (Kafka,
 * MQTT 5) or as a JSON escape (structured, batch) decodes, and the
 * validator refuses it. A Kafka record key that is not a String is left
 * unmapped, as a key that is not UTF-8 is: it is not the client's
 * attribute, and the record is still taken. */
static void test_string_rule(void) {
  ceb_headers h = {0};
  ceb_event *ev = NULL;
  ceb_error err;
  base_headers(&h, "ce-");
  ceb_headers_add(&h, "ce-subject", "a%09b", 5);
  CHECK_INT(ceb_http_decode(&h, NULL, 0, &ev, &err), CEB_OK);
  CHECK_STR(ceb_event_get(ev, "subject"), "a\tb");
  CHECK(string_refused(ev, "subject"));
  ceb_headers_clear(&h);

  base_headers(&h, "ce_");
  ceb_headers_add(&h, "ce_myext", "\x1b[2J", 4);
  ev = NULL;
  CHECK_INT(ceb_kafka_decode(&h, NULL, 0, NULL, 0, &ev, &err), CEB_OK);
  CHECK(string_refused(ev, "myext"));
  ceb_headers_clear(&h);

  base_headers(&h, "ce_");
  ev = NULL;
  CHECK_INT(ceb_kafka_decode(&h, "k\x01", 2, NULL, 0, &ev, &err), CEB_OK);
  CHECK(ev && ceb_event_get(ev, "partitionkey") == NULL);
  ceb_violations v;
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 0);
  ceb_event_unref(ev);
  ev = NULL;
  CHECK_INT(ceb_kafka_decode(&h, "k\xef\xbf\xbf", 4, NULL, 0, &ev, &err),
            CEB_OK);
  CHECK(ev && ceb_event_get(ev, "partitionkey") == NULL);
  ceb_event_unref(ev);
  ceb_headers_clear(&h);

  base_headers(&h, "");
  ceb_headers_add(&h, "subject", "next\xc2\x85line", 10);
  ev = NULL;
  CHECK_INT(ceb_mqtt_decode(5, &h, "application/json", "{}", 2, &ev, &err),
            CEB_OK);
  CHECK(string_refused(ev, "subject"));
  ceb_headers_clear(&h);

  const char *js = "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"urn:t\","
                   "\"type\":\"nl.x.y\",\"subject\":\"a\\u0009b\"}";
  ev = NULL;
  CHECK_INT(ceb_json_decode(js, strlen(js), &ev, &err), CEB_OK);
  CHECK(string_refused(ev, "subject"));
  const char *batch = "[{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":"
                      "\"urn:t\",\"type\":\"nl.x.y\",\"myext\":\"\\u007f\"}]";
  ceb_event **evs = NULL;
  size_t n = 0;
  CHECK_INT(ceb_batch_decode(batch, strlen(batch), &evs, &n, &err), CEB_OK);
  CHECK_INT(n, 1);
  if (n == 1) CHECK(string_refused(ceb_event_ref(evs[0]), "myext"));
  ceb_events_free(evs, n);
}

int main(void) {
  test_string_rule();
  test_http_binary_decode();
  test_http_encode();
  test_round_trip_kinds();
  test_kafka();
  test_mqtt();
  return ceb_test_done("unit_event_bindings");
}
