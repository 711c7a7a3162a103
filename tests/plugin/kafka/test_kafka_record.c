/* The kafka sink's record builder (kafka_record.c) maps an event exactly as
 * the SDK's ceb_kafka_encode does: same headers in the same order with the
 * same values, same value bytes, same key, in binary and structured mode,
 * with and without datacontenttype, with JSON, text, binary and no data,
 * with extensions and a maximum-length attribute name; key_attribute picks
 * the key (NULL: none); an invalid mode is refused. One mapping: the
 * builder goes through the SDK's ceb_kafka_visit once per record (counted
 * with the linker's --wrap, see CMakeLists.txt) and the visitor's headers
 * are ceb_kafka_encode's; a visitor's error stops the walk. */
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "kafka_record.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:test"

static int g_visits;
int __real_ceb_kafka_visit(const ceb_event *ev, ceb_mode mode,
                           const char *key_attr, ceb_header_fn fn, void *arg,
                           ceb_kafka_parts *parts);
int __wrap_ceb_kafka_visit(const ceb_event *ev, ceb_mode mode,
                           const char *key_attr, ceb_header_fn fn, void *arg,
                           ceb_kafka_parts *parts) {
  g_visits++;
  return __real_ceb_kafka_visit(ev, mode, key_attr, fn, arg, parts);
}

static int collect(void *arg, const char *name, const char *value, size_t len) {
  return ceb_headers_add(arg, name, value, len);
}

static int fail_third(void *arg, const char *name, const char *value,
                      size_t len) {
  (void)name;
  (void)value;
  (void)len;
  return ++*(int *)arg == 3 ? CEB_ENOMEM : CEB_OK;
}

static ceb_event *base_event(const char *id) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", id);
  ceb_event_set(ev, "source", SRC);
  ceb_event_set(ev, "type", "nl.edu.test");
  return ev;
}

/* Compares kafka_record_build's record for ev with ceb_kafka_encode's. */
static void check_same(const char *what, const ceb_event *ev, ceb_mode mode,
                       const char *key_attr) {
  ceb_headers want = {0};
  char *key = NULL, *value = NULL;
  size_t key_len = 0, value_len = 0;
  CHECK_INT(ceb_kafka_encode(ev, mode, key_attr ? key_attr : "partitionkey",
                             &want, &key, &key_len, &value, &value_len),
            CEB_OK);
  /* the visitor's headers are ceb_kafka_encode's, in order */
  ceb_headers seen = {0};
  ceb_kafka_parts parts;
  CHECK_INT(__real_ceb_kafka_visit(ev, mode,
                                   key_attr ? key_attr : "partitionkey",
                                   collect, &seen, &parts),
            CEB_OK);
  CHECK_INT(seen.count, want.count);
  for (size_t h = 0; h < seen.count && h < want.count; h++) {
    CHECK_STR(seen.items[h].name, want.items[h].name);
    CHECK_STR(seen.items[h].value, want.items[h].value);
  }
  ceb_headers_clear(&seen);
  kafka_record r;
  int visits = g_visits;
  CHECK_INT(kafka_record_build(ev, mode, key_attr, NULL, 0, &r), CEB_OK);
  CHECK_INT(g_visits, visits + 1); /* built through the SDK's mapping */
  const char *name;
  const void *val;
  size_t size, i = 0;
  while (r.headers &&
         !rd_kafka_header_get_all(r.headers, i, &name, &val, &size)) {
    if (i >= want.count) {
      fprintf(stderr, "%s: extra header %s\n", what, name);
      CHECK(0);
      break;
    }
    if (strcmp(name, want.items[i].name) || size != want.items[i].value_len ||
        memcmp(val, want.items[i].value, size)) {
      fprintf(stderr, "%s: header %zu is %s=%.*s, want %s=%s\n", what, i, name,
              (int)size, (const char *)val, want.items[i].name,
              want.items[i].value);
      CHECK(0);
    }
    i++;
  }
  CHECK_INT(i, want.count);
  CHECK_INT(r.value_len, value_len);
  CHECK((r.value == NULL) == (value == NULL));
  if (r.value && value) CHECK(!memcmp(r.value, value, value_len));
  if (key_attr) {
    CHECK((r.key == NULL) == (key == NULL));
    CHECK_INT(r.key_len, key_len);
    if (r.key && key) CHECK(!memcmp(r.key, key, key_len));
  } else {
    CHECK(r.key == NULL);
    CHECK_INT(r.key_len, 0);
  }
  kafka_record_clear(&r);
  CHECK(r.headers == NULL && r.owned == NULL && r.value == NULL);
  ceb_headers_clear(&want);
  ceb_free(key);
  ceb_free(value);
}

static void check_both_modes(const char *what, const ceb_event *ev) {
  check_same(what, ev, CEB_MODE_BINARY, "partitionkey");
  check_same(what, ev, CEB_MODE_STRUCTURED, "partitionkey");
  check_same(what, ev, CEB_MODE_BINARY, "subject");
  check_same(what, ev, CEB_MODE_BINARY, NULL);
}

/* An egress mapping's result (ABI 1.2) becomes the record: its body as the
 * value (borrowed), content-type from the mapping then its headers in
 * order (a mapped content-type header dropped, no ce_* headers), its key,
 * else the key attribute of the event. */
static void test_mapped(void) {
  ceb_event *ev = base_event("mapped");
  ceb_event_set(ev, "partitionkey", "pk-1");
  const char body[] = "{\"type\":\"t\",\"data\":{}}";
  ceb_mapped_header hs[] = {
      {"x-tenant", "uva"}, {"Content-Type", "text/evil"}, {"x-trace", ""}};
  ceb_mapped_out mo = {
      sizeof mo, body, sizeof body - 1, "application/json", hs, 3, NULL, NULL};
  int before = g_visits;
  kafka_record r;
  CHECK_INT(kafka_record_mapped(&mo, ev, "partitionkey", &r), CEB_OK);
  CHECK_INT(g_visits, before); /* not the binding's mapping */
  CHECK(r.value == body && r.value_len == sizeof body - 1);
  CHECK(r.key && r.key_len == 4 && !memcmp(r.key, "pk-1", 4));
  const char *name;
  const void *val;
  size_t size;
  const char *want[][2] = {{"content-type", "application/json"},
                           {"x-tenant", "uva"},
                           {"x-trace", ""}};
  size_t i = 0;
  for (; !rd_kafka_header_get_all(r.headers, i, &name, &val, &size); i++) {
    CHECK(i < 3);
    if (i >= 3) break;
    CHECK_STR(name, want[i][0]);
    CHECK(size == strlen(want[i][1]) && !memcmp(val, want[i][1], size));
  }
  CHECK_INT(i, 3);
  kafka_record_clear(&r);

  /* the mapping's key wins; without one and without a key attribute: none */
  mo.key = "k-9";
  CHECK_INT(kafka_record_mapped(&mo, ev, "partitionkey", &r), CEB_OK);
  CHECK(r.key_len == 3 && !memcmp(r.key, "k-9", 3));
  kafka_record_clear(&r);
  mo.key = NULL;
  CHECK_INT(kafka_record_mapped(&mo, ev, NULL, &r), CEB_OK);
  CHECK(r.key == NULL && r.key_len == 0);
  kafka_record_clear(&r);
  ceb_event_unref(ev);
}

int main(void) {
  test_mapped();
  /* Every context attribute, extensions (sorted after them), JSON data. */
  ceb_event *ev = base_event("full");
  ceb_event_set(ev, "subject", "student/42");
  ceb_event_set(ev, "time", "2026-11-22T18:00:00Z");
  ceb_event_set(ev, "datacontenttype", "application/json");
  ceb_event_set(ev, "dataschema", "https://example.org/s.json");
  ceb_event_set(ev, "partitionkey", "key-7");
  ceb_event_set(ev, "zzext", "last");
  ceb_event_set(ev, "aaext", "first");
  const char *data = "{\"n\":1,\"s\":\"\\u00e9\"}";
  ceb_event_set_data(ev, data, strlen(data), CEB_DATA_JSON);
  check_both_modes("full", ev);

  /* The header carries exactly what the SDK maps, checked by hand once. */
  kafka_record r;
  CHECK_INT(
      kafka_record_build(ev, CEB_MODE_BINARY, "partitionkey", NULL, 0, &r),
      CEB_OK);
  const void *val;
  size_t size;
  CHECK_INT(rd_kafka_header_get_last(r.headers, "ce_aaext", &val, &size),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  CHECK(size == 5 && !memcmp(val, "first", 5));
  CHECK_INT(rd_kafka_header_get_last(r.headers, "content-type", &val, &size),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  CHECK(size == 16 && !memcmp(val, "application/json", 16));
  CHECK_INT(
      rd_kafka_header_get_last(r.headers, "ce_datacontenttype", &val, &size),
      RD_KAFKA_RESP_ERR__NOENT);
  CHECK(r.key_len == 5 && !memcmp(r.key, "key-7", 5));
  kafka_record_clear(&r);
  ceb_event_unref(ev);

  /* JSON data without datacontenttype: content-type application/json. */
  ev = base_event("implied");
  ceb_event_set_data(ev, "[1,2]", 5, CEB_DATA_JSON);
  check_both_modes("implied content type", ev);
  ceb_event_unref(ev);

  /* Binary data (NUL bytes included) and text data. */
  ev = base_event("binary");
  ceb_event_set(ev, "datacontenttype", "application/octet-stream");
  ceb_event_set_data(ev, "a\0b\xff", 4, CEB_DATA_BINARY);
  check_both_modes("binary data", ev);
  ceb_event_unref(ev);
  ev = base_event("text");
  ceb_event_set(ev, "datacontenttype", "text/plain");
  ceb_event_set(ev, "partitionkey", "");
  ceb_event_set_data(ev, "hello", 5, CEB_DATA_TEXT);
  check_both_modes("text data, empty key", ev);
  ceb_event_unref(ev);

  /* No data at all: no content-type header, no value. */
  ev = base_event("nodata");
  check_both_modes("no data", ev);
  ceb_event_unref(ev);

  /* An extension name of the maximum length. */
  ev = base_event("longname");
  char name[CEB_ATTR_NAME_MAX + 1];
  memset(name, 'x', CEB_ATTR_NAME_MAX);
  name[CEB_ATTR_NAME_MAX] = '\0';
  CHECK_INT(ceb_event_set(ev, name, "v"), CEB_OK);
  check_both_modes("longest name", ev);
  ceb_event_unref(ev);

  /* Structured mode with the journal's bytes (ceb_delivery_encoded): the
   * value is those bytes, borrowed, not a new encoding; the headers and key
   * are the same; binary mode ignores them. */
  ev = base_event("passthrough");
  ceb_event_set(ev, "partitionkey", "pk");
  char *json = NULL;
  size_t json_len = 0;
  CHECK_INT(ceb_json_encode(ev, &json, &json_len), CEB_OK);
  CHECK_INT(kafka_record_build(ev, CEB_MODE_STRUCTURED, "partitionkey", json,
                               json_len, &r),
            CEB_OK);
  CHECK(r.value == json && r.value_len == json_len && r.owned == NULL);
  CHECK(r.key && r.key_len == 2 && !memcmp(r.key, "pk", 2));
  CHECK_INT(rd_kafka_header_get_last(r.headers, "content-type", &val, &size),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  CHECK(size == 28 && !memcmp(val, "application/cloudevents+json", 28));
  kafka_record_clear(&r);
  CHECK_INT(kafka_record_build(ev, CEB_MODE_BINARY, NULL, json, json_len, &r),
            CEB_OK);
  CHECK(r.value == NULL && r.value_len == 0);
  kafka_record_clear(&r);
  ceb_free(json);
  ceb_event_unref(ev);

  /* A visitor's error stops the walk and is the answer; the builder
   * clears what it had. */
  ev = base_event("stop");
  ceb_event_set(ev, "subject", "s");
  ceb_event_set(ev, "zext", "z");
  int calls = 0;
  ceb_kafka_parts parts;
  CHECK_INT(
      ceb_kafka_visit(ev, CEB_MODE_BINARY, NULL, fail_third, &calls, &parts),
      CEB_ENOMEM);
  CHECK_INT(calls, 3);
  CHECK_INT(
      ceb_kafka_visit(ev, CEB_MODE_BATCH, NULL, fail_third, &calls, &parts),
      CEB_EINVAL);
  ceb_event_unref(ev);

  /* Bad arguments are refused and leave nothing behind. */
  ev = base_event("bad");
  CHECK_INT(kafka_record_build(ev, CEB_MODE_BATCH, NULL, NULL, 0, &r),
            CEB_EINVAL);
  CHECK(r.headers == NULL && r.owned == NULL);
  CHECK_INT(kafka_record_build(NULL, CEB_MODE_BINARY, NULL, NULL, 0, &r),
            CEB_EINVAL);
  ceb_event_unref(ev);
  return ceb_test_done("test_kafka_record");
}
