/* Examples from the CloudEvents JSON format spec (structured form and its
 * HTTP binary rendering) and the three NL GOV profile examples. */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include "cli/http_dump.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

#define SPEC_EX CEB_CONFORMANCE_DIR "/cloudevents-spec/json-format-examples/"
#define NLGOV_EX CEB_CONFORMANCE_DIR "/nl-gov-cloudevents/examples/"

static ceb_event *decode_file(const char *path, ceb_error *err) {
  size_t len;
  char *text = ceb_test_read_file(path, &len);
  CHECK_MSG(text != NULL, "cannot read %s", path);
  ceb_event *ev = NULL;
  if (text) ceb_json_decode(text, len, &ev, err);
  free(text);
  return ev;
}

/* Bodies compare as JSON values for JSON content, byte for byte otherwise
 * (the spec pretty-prints; the encoder writes compact JSON). */
static int same_body(const char *ct, const char *a, size_t alen, const char *b,
                     size_t blen) {
  if (ct && ceb_media_type_is_json(ct)) {
    json_t *ja = json_loadb(a, alen, JSON_DECODE_ANY, NULL);
    json_t *jb = json_loadb(b, blen, JSON_DECODE_ANY, NULL);
    int eq = ja && jb && json_equal(ja, jb);
    json_decref(ja);
    json_decref(jb);
    return eq;
  }
  return alen == blen && memcmp(a, b, alen) == 0;
}

static void test_spec_example(int n, const char *id) {
  char path[512];
  snprintf(path, sizeof path, SPEC_EX "example-%d-%s.structured.json", n, id);
  ceb_error err;
  ceb_event *ev = decode_file(path, &err);
  CHECK_MSG(ev != NULL, "example %d: %s", n, err.message);
  if (!ev) return;
  ceb_violations v;
  CHECK_MSG(ceb_event_validate(ev, NULL, &v) == 0, "example %d: %s", n,
            v.count ? v.items[0].code : "");
  CHECK(ceb_event_get(ev, "subject") == NULL);        /* "subject": null */
  CHECK(ceb_event_get(ev, "unsetextension") == NULL); /* example 2 */

  ceb_headers h = {0};
  char *body = NULL;
  size_t len;
  CHECK_INT(ceb_http_encode(ev, CEB_MODE_BINARY, &h, &body, &len), CEB_OK);

  snprintf(path, sizeof path, SPEC_EX "example-%d-%s.binary-http.txt", n, id);
  size_t flen, off;
  char *want = ceb_test_read_file(path, &flen);
  CHECK(want != NULL);
  ceb_headers wh = {0};
  CHECK_INT(ceb_http_dump_parse(want, flen, &wh, &off, &err), CEB_OK);
  /* same header set (order and name case do not matter) */
  CHECK_MSG(h.count == wh.count, "example %d: %zu headers, want %zu", n,
            h.count, wh.count);
  for (size_t i = 0; i < wh.count; i++) {
    const char *got = ceb_headers_get(&h, wh.items[i].name);
    CHECK_MSG(got && !strcmp(got, wh.items[i].value),
              "example %d: %s = '%s', want '%s'", n, wh.items[i].name,
              got ? got : "(none)", wh.items[i].value);
  }
  size_t blen = flen - off;
  while (blen && want[off + blen - 1] == '\n') /* file's final newline */
    blen--;
  CHECK_MSG(same_body(ceb_headers_get(&h, "content-type"), body, len,
                      want + off, blen),
            "example %d: body differs", n);

  /* and the spec's binary rendering decodes to the same event, apart from
   * the implied application/json made explicit (example 5) */
  ceb_event *back = NULL;
  CHECK_INT(ceb_http_decode(&wh, want + off, blen, &back, &err), CEB_OK);
  if (back) {
    CHECK_INT(ceb_event_validate(back, NULL, &v), 0);
    CHECK_STR(ceb_event_get(back, "id"), ceb_event_get(ev, "id"));
    CHECK_INT(ceb_event_data_kind(back), ceb_event_data_kind(ev));
    size_t l1, l2;
    const char *d1 = ceb_event_data(ev, &l1), *d2 = ceb_event_data(back, &l2);
    CHECK(same_body(ceb_event_get(back, "datacontenttype"), d1, l1, d2, l2));
  }
  ceb_event_unref(back);
  ceb_headers_clear(&wh);
  free(want);
  ceb_headers_clear(&h);
  ceb_free(body);
  ceb_event_unref(ev);
}

static void test_spec_examples(void) {
  test_spec_example(2, "B234-1234-1234");
  test_spec_example(3, "C234-1234-1234");
  test_spec_example(4, "C234-1234-1234");
  test_spec_example(5, "D234-1234-1234");
  test_spec_example(6, "D234-1234-1234");

  /* Example 1 and the first batch event carry the spec's placeholder
   * "... base64 encoded string ...", which is not base64: it must fail. */
  ceb_error err;
  ceb_event *ev =
      decode_file(SPEC_EX "example-1-A234-1234-1234.structured.json", &err);
  CHECK(ev == NULL);
  CHECK_STR(err.code, "ce.data_base64.invalid");
  size_t len;
  char *text = ceb_test_read_file(SPEC_EX "batch-two-events.json", &len);
  ceb_event **evs = NULL;
  size_t n = 0;
  CHECK_INT(ceb_batch_decode(text, len, &evs, &n, &err), CEB_EINVAL);
  CHECK_INT(err.index, 0);
  CHECK_STR(err.code, "ce.data_base64.invalid");
  free(text);
  /* with the placeholder replaced the batch is valid */
  json_t *batch = json_load_file(SPEC_EX "batch-two-events.json", 0, NULL);
  json_object_set_new(json_array_get(batch, 0), "data_base64",
                      json_string("AAECAw=="));
  text = json_dumps(batch, 0);
  CHECK_INT(ceb_batch_decode(text, strlen(text), &evs, &n, &err), CEB_OK);
  CHECK_INT(n, 2);
  for (size_t i = 0; i < n; i++) {
    ceb_violations v;
    CHECK_INT(ceb_event_validate(evs[i], NULL, &v), 0);
  }
  CHECK_INT(ceb_event_data_kind(evs[1]), CEB_DATA_JSON);
  ceb_events_free(evs, n);
  free(text);
  json_decref(batch);
  text = ceb_test_read_file(SPEC_EX "batch-empty.json", &len);
  CHECK_INT(ceb_batch_decode(text, len, &evs, &n, &err), CEB_OK);
  CHECK_INT(n, 0);
  ceb_events_free(evs, n);
  free(text);
}

static void test_nlgov_examples(void) {
  static const char *const files[] = {"nl-gov-profile-full-example.json",
                                      "cloudevents-spec-example.json",
                                      "dataref-example.json"};
  ceb_validate_opts o = {sizeof o, CEB_PROFILE_ENFORCE, 0};
  for (size_t i = 0; i < 3; i++) {
    char path[512];
    snprintf(path, sizeof path, NLGOV_EX "%s", files[i]);
    ceb_error err;
    ceb_event *ev = decode_file(path, &err);
    CHECK_MSG(ev != NULL, "%s: %s", files[i], err.message);
    if (!ev) continue;
    ceb_violations v;
    CHECK_MSG(ceb_event_validate(ev, &o, &v) == 0, "%s: %s", files[i],
              v.count ? v.items[0].code : "");
    for (size_t k = 0; k < v.count; k++) /* only advice may remain */
      CHECK_MSG(v.items[k].severity == CEB_SEV_WARNING, "%s: %s", files[i],
                v.items[k].code);
    if (i == 0) {
      CHECK_INT(v.count, 0); /* the full example follows every advice */
      CHECK(ceb_event_get(ev, "geheimnummer") == NULL);
      CHECK_STR(ceb_event_get(ev, "sequencetype"), "integer");
      ceb_headers h = {0};
      char *body;
      size_t len;
      CHECK_INT(ceb_http_encode(ev, CEB_MODE_BINARY, &h, &body, &len), CEB_OK);
      CHECK(ceb_headers_get(&h, "ce-geheimnummer") == NULL);
      CHECK_STR(ceb_headers_get(&h, "ce-source"),
                "urn:nld:oin:00000001823288444000:systeem:BRP-component");
      CHECK_STR(ceb_headers_get(&h, "ce-nlbrpnationaliteit"), "0083");
      ceb_headers_clear(&h);
      ceb_free(body);
      char *json;
      CHECK_INT(ceb_json_encode(ev, &json, &len), CEB_OK);
      CHECK(strstr(json, "geheimnummer") == NULL);
      ceb_free(json);
    }
    if (i == 2) { /* https source, XML data, no time: advice only */
      static const char *const advice[] = {"nlgov.source.nld_urn",
                                           "nlgov.datacontenttype.json",
                                           "nlgov.time.missing"};
      CHECK_INT(v.count, 3);
      for (size_t k = 0; k < v.count && k < 3; k++)
        CHECK_STR(v.items[k].code, advice[k]);
    }
    ceb_event_unref(ev);
  }
}

int main(void) {
  ceb_test_need_data(NLGOV_EX);
  test_spec_examples();
  test_nlgov_examples();
  return ceb_test_done("conformance_ce_examples");
}
