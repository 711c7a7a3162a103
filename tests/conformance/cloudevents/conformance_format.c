/* CloudEvents conformance format tests (format/json/ files): every valid
 * event and batch decodes, validates and matches the file attribute by
 * attribute (timestamps compared as instants); every invalid one is rejected
 * by decode + validate, including the 6 the CloudEvents JSON schema accepts. */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

#define FORMAT_DIR CEB_CONFORMANCE_DIR "/cloudevents-conformance/format/json/"

static json_t *load_tests(const char *file) {
  json_error_t jerr;
  json_t *root = json_load_file(file, 0, &jerr);
  CHECK_MSG(root != NULL, "%s: %s", file, jerr.text);
  json_t *tests = json_object_get(root, "tests");
  CHECK(json_is_array(tests));
  json_incref(tests);
  json_decref(root);
  return tests;
}

static char *dump(json_t *v) {
  return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* Compares one decoded event with the JSON object it came from. */
static void check_matches(const char *id, const ceb_event *ev, json_t *want) {
  const char *key;
  json_t *v;
  size_t attrs = 0;
  json_object_foreach(want, key, v) {
    if (!strcmp(key, "data") || !strcmp(key, "data_base64")) continue;
    const char *got = ceb_event_get(ev, key);
    if (json_is_null(v)) {
      CHECK_MSG(got == NULL, "%s: %s should be unset", id, key);
      continue;
    }
    attrs++;
    CHECK_MSG(got != NULL, "%s: %s missing", id, key);
    if (!got) continue;
    if (json_is_string(v) && !strcmp(key, "time")) {
      int64_t a, b;
      CHECK_INT(ceb_timestamp_parse(got, &a), CEB_OK);
      CHECK_INT(ceb_timestamp_parse(json_string_value(v), &b), CEB_OK);
      CHECK_MSG(a == b, "%s: time %s", id, got);
    } else if (json_is_string(v)) {
      CHECK_MSG(!strcmp(got, json_string_value(v)), "%s: %s = %s", id, key,
                got);
    } else if (json_is_integer(v)) {
      char num[32];
      snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
      CHECK_STR(got, num);
      CHECK_INT(ceb_event_get_type(ev, key), CEB_ATTR_INTEGER);
    } else if (json_is_boolean(v)) {
      CHECK_STR(got, json_is_true(v) ? "true" : "false");
      CHECK_INT(ceb_event_get_type(ev, key), CEB_ATTR_BOOLEAN);
    } else {
      CHECK_MSG(0, "%s: unexpected JSON type for %s", id, key);
    }
  }
  CHECK_MSG(ceb_event_attr_count(ev) == attrs, "%s: %zu attributes, want %zu",
            id, ceb_event_attr_count(ev), attrs);
  json_t *data = json_object_get(want, "data");
  size_t len;
  const char *bytes = ceb_event_data(ev, &len);
  if (json_is_string(data) && ceb_event_data_kind(ev) == CEB_DATA_TEXT) {
    CHECK(len == json_string_length(data) &&
          memcmp(bytes, json_string_value(data), len) == 0);
  } else if (data && !json_is_null(data)) {
    json_t *got = json_loadb(bytes, len, JSON_DECODE_ANY, NULL);
    CHECK_MSG(got && json_equal(got, data), "%s: data differs", id);
    json_decref(got);
  } else if (!json_object_get(want, "data_base64")) {
    CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_NONE);
  }
}

/* Decoded event re-encodes and decodes to the same JSON (lossless). */
static void check_round_trip(const char *id, const ceb_event *ev) {
  char *a = NULL, *b = NULL;
  size_t n;
  CHECK_INT(ceb_json_encode(ev, &a, &n), CEB_OK);
  ceb_event *again = NULL;
  CHECK_INT(ceb_json_decode(a, n, &again, NULL), CEB_OK);
  CHECK_INT(ceb_json_encode(again, &b, &n), CEB_OK);
  CHECK_MSG(a && b && !strcmp(a, b), "%s: round trip differs", id);
  ceb_free(a);
  ceb_free(b);
  ceb_event_unref(again);
}

static void test_valid_events(void) {
  json_t *tests = load_tests(FORMAT_DIR "valid-events.json");
  size_t i;
  json_t *t;
  json_array_foreach(tests, i, t) {
    const char *id = json_string_value(json_object_get(t, "id"));
    json_t *want = json_object_get(t, "event");
    char *text = dump(want);
    ceb_event *ev = NULL;
    ceb_error err;
    int rc = ceb_json_decode(text, strlen(text), &ev, &err);
    CHECK_MSG(rc == CEB_OK, "%s: %s %s", id, err.code, err.message);
    if (rc == CEB_OK) {
      ceb_violations v;
      CHECK_MSG(ceb_event_validate(ev, NULL, &v) == 0, "%s: %s", id,
                v.count ? v.items[0].code : "");
      check_matches(id, ev, want);
      check_round_trip(id, ev);
    }
    ceb_event_unref(ev);
    free(text);
  }
  CHECK_INT(json_array_size(tests), 10);
  json_decref(tests);
}

/* Rejected by the decoder, or decoded and then rejected by validation. */
static int rejected(const char *text, const char **how) {
  ceb_event *ev = NULL;
  ceb_error err;
  static char code[64];
  if (ceb_json_decode(text, strlen(text), &ev, &err) != CEB_OK) {
    snprintf(code, sizeof code, "decode %s", err.code);
    *how = code;
    return 1;
  }
  ceb_violations v;
  size_t errors = ceb_event_validate(ev, NULL, &v);
  ceb_event_unref(ev);
  snprintf(code, sizeof code, "validate %s", v.count ? v.items[0].code : "-");
  *how = code;
  return errors > 0;
}

static void test_invalid_events(void) {
  json_t *tests = load_tests(FORMAT_DIR "invalid-events.json");
  /* the cases the CloudEvents JSON schema lets through: the rejection must
   * come from our own rules, each with the expected code */
  static const char *const schema_gaps[][2] = {
      {"invalidUnknownSpecVersion", "decode ce.specversion.unsupported"},
      {"invalidNonRfc2046DataContentType",
       "validate ce.datacontenttype.invalid"},
      {"invalidCapitalizedExtension", "validate ce.attr.name"},
      {"invalidPunctuatedExtension", "validate ce.attr.name"},
      {"invalidNonIntegerExtensionValue", "decode ce.attr.type"},
      {"invalidBothDataAndDataBase64", "decode ce.data.both"},
  };
  size_t i, gaps = 0;
  json_t *t;
  json_array_foreach(tests, i, t) {
    const char *id = json_string_value(json_object_get(t, "id"));
    char *text = dump(json_object_get(t, "event"));
    const char *how = "";
    CHECK_MSG(rejected(text, &how), "%s accepted", id);
    for (size_t k = 0; k < 6; k++)
      if (!strcmp(id, schema_gaps[k][0])) {
        gaps++;
        CHECK_MSG(!strcmp(how, schema_gaps[k][1]), "%s: %s", id, how);
      }
    free(text);
  }
  CHECK_INT(json_array_size(tests), 25);
  CHECK_INT(gaps, 6);
  json_decref(tests);
}

static void test_batches(void) {
  json_t *tests = load_tests(FORMAT_DIR "valid-batches.json");
  size_t i;
  json_t *t;
  json_array_foreach(tests, i, t) {
    const char *id = json_string_value(json_object_get(t, "id"));
    json_t *batch = json_object_get(t, "batch");
    char *text = dump(batch);
    ceb_event **evs = NULL;
    size_t n = 0;
    ceb_error err;
    int rc = ceb_batch_decode(text, strlen(text), &evs, &n, &err);
    CHECK_MSG(rc == CEB_OK, "%s: %s", id, err.message);
    CHECK_INT(n, json_array_size(batch));
    for (size_t k = 0; rc == CEB_OK && k < n; k++) {
      ceb_violations v;
      CHECK_INT(ceb_event_validate(evs[k], NULL, &v), 0);
      check_matches(id, evs[k], json_array_get(batch, k));
    }
    char *out = NULL;
    size_t len;
    CHECK_INT(ceb_batch_encode(evs, n, &out, &len), CEB_OK);
    json_t *back = json_loadb(out, len, 0, NULL);
    CHECK_INT(json_array_size(back), n);
    json_decref(back);
    ceb_free(out);
    ceb_events_free(evs, n);
    free(text);
  }
  CHECK_INT(json_array_size(tests), 5);
  json_decref(tests);

  tests = load_tests(FORMAT_DIR "invalid-batches.json");
  json_array_foreach(tests, i, t) {
    const char *id = json_string_value(json_object_get(t, "id"));
    char *text = dump(json_object_get(t, "batch"));
    ceb_event **evs = NULL;
    size_t n = 0, errors = 0;
    ceb_error err;
    int rc = ceb_batch_decode(text, strlen(text), &evs, &n, &err);
    if (rc == CEB_OK) {
      for (size_t k = 0; k < n; k++) {
        ceb_violations v;
        errors += ceb_event_validate(evs[k], NULL, &v);
      }
      ceb_events_free(evs, n);
    } else {
      CHECK_MSG(err.index >= 0, "%s: no element index", id);
    }
    CHECK_MSG(rc != CEB_OK || errors > 0, "%s accepted", id);
    free(text);
  }
  CHECK_INT(json_array_size(tests), 3);
  json_decref(tests);
}

int main(void) {
  ceb_test_need_data(FORMAT_DIR);
  test_valid_events();
  test_invalid_events();
  test_batches();
  return ceb_test_done("conformance_ce_format");
}
