/* CloudEvents conformance feature files: every HTTP and Kafka scenario (and
 * every row of its Examples table) is turned into a request or record,
 * decoded, and checked against the scenario's attribute table and data; the
 * event is then encoded back in the same mode and decoded again to check the
 * mapping in the other direction. */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include "cli/http_dump.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "gherkin.h"

#define FEATURES CEB_CONFORMANCE_DIR "/cloudevents-conformance/features/"

static void check_event(const char *title, const ceb_event *ev,
                        const gk_scenario *sc, size_t row) {
  const gk_step *attrs = gk_find_step(sc, "the attributes are");
  const gk_step *data =
      gk_find_step(sc, "the data is equal to the following JSON");
  CHECK_MSG(attrs && attrs->table.rows > 1, "%s: no attribute table", title);
  if (!attrs) return;
  ceb_violations v;
  CHECK_MSG(ceb_event_validate(ev, NULL, &v) == 0, "%s: invalid: %s", title,
            v.count ? v.items[0].code : "");
  for (size_t r = 1; r < attrs->table.rows; r++) {
    const char *key = attrs->table.cell[r][0];
    char *want = gk_expand(attrs->table.cell[r][1], &sc->examples, row);
    const char *got = ceb_event_get(ev, key);
    if (!strcmp(key, "time")) {
      int64_t a = 0, b = 1;
      CHECK(got && ceb_timestamp_parse(got, &a) == CEB_OK);
      CHECK(ceb_timestamp_parse(want, &b) == CEB_OK);
      CHECK_MSG(a == b, "%s: time", title);
    } else {
      CHECK_MSG(got && !strcmp(got, want), "%s: %s = '%s', want '%s'", title,
                key, got ? got : "(unset)", want);
    }
    free(want);
  }
  CHECK_MSG(ceb_event_attr_count(ev) == attrs->table.rows - 1,
            "%s: %zu attributes, want %zu", title, ceb_event_attr_count(ev),
            attrs->table.rows - 1);
  if (data && data->doc) {
    size_t len;
    const char *bytes = ceb_event_data(ev, &len);
    json_t *want = json_loads(data->doc, JSON_DECODE_ANY, NULL);
    json_t *got = bytes ? json_loadb(bytes, len, JSON_DECODE_ANY, NULL) : NULL;
    CHECK_MSG(want && got && json_equal(want, got), "%s: data differs", title);
    CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_JSON);
    json_decref(want);
    json_decref(got);
  }
}

static int run_http(const gk_scenario *sc, size_t row, const char *title) {
  const gk_step *req = gk_find_step(sc, "an HTTP request");
  if (!req || !req->doc) return 0;
  char *text = gk_expand(req->doc, &sc->examples, row);
  ceb_headers h = {0};
  size_t off;
  ceb_error err;
  CHECK_INT(ceb_http_dump_parse(text, strlen(text), &h, &off, &err), CEB_OK);
  ceb_event *ev = NULL;
  int rc = ceb_http_decode(&h, text + off, strlen(text) - off, &ev, &err);
  CHECK_MSG(rc == CEB_OK, "%s: %s", title, err.message);
  if (rc == CEB_OK) {
    check_event(title, ev, sc, row);
    /* back to HTTP in the same mode and decoded again */
    ceb_mode mode = ceb_http_mode_of(ceb_headers_get(&h, "content-type"));
    ceb_headers h2 = {0};
    char *body = NULL;
    size_t len;
    CHECK_INT(ceb_http_encode(ev, mode, &h2, &body, &len), CEB_OK);
    ceb_event *again = NULL;
    CHECK_INT(ceb_http_decode(&h2, body, len, &again, &err), CEB_OK);
    if (again) check_event(title, again, sc, row);
    ceb_event_unref(again);
    ceb_free(body);
    ceb_headers_clear(&h2);
  }
  ceb_event_unref(ev);
  ceb_headers_clear(&h);
  free(text);
  return 1;
}

static int run_kafka(const gk_scenario *sc, size_t row, const char *title) {
  const gk_step *msg = gk_find_step(sc, "a Kafka message with payload");
  const gk_step *hdr = gk_find_step(sc, "Kafka headers");
  if (!msg || !msg->doc || !hdr) return 0;
  ceb_headers h = {0};
  for (size_t r = 1; r < hdr->table.rows; r++) {
    char *v = gk_expand(hdr->table.cell[r][1], &sc->examples, row);
    ceb_headers_add(&h, hdr->table.cell[r][0], v, strlen(v));
    free(v);
  }
  char *payload = gk_expand(msg->doc, &sc->examples, row);
  ceb_event *ev = NULL;
  ceb_error err;
  int rc = ceb_kafka_decode(&h, NULL, 0, payload, strlen(payload), &ev, &err);
  CHECK_MSG(rc == CEB_OK, "%s: %s", title, err.message);
  if (rc == CEB_OK) {
    check_event(title, ev, sc, row);
    ceb_mode mode = ceb_http_mode_of(ceb_headers_get(&h, "content-type"));
    ceb_headers h2 = {0};
    char *key = NULL, *value = NULL;
    size_t klen, len;
    CHECK_INT(ceb_kafka_encode(ev, mode, NULL, &h2, &key, &klen, &value, &len),
              CEB_OK);
    CHECK(key == NULL);          /* no partitionkey in these events */
    if (mode == CEB_MODE_BINARY) /* ce_ headers as in the scenario */
      for (size_t r = 1; r < hdr->table.rows; r++)
        CHECK_MSG(ceb_headers_get(&h2, hdr->table.cell[r][0]) != NULL,
                  "%s: header %s not written", title, hdr->table.cell[r][0]);
    ceb_event *again = NULL;
    CHECK_INT(ceb_kafka_decode(&h2, key, klen, value, len, &again, &err),
              CEB_OK);
    if (again) check_event(title, again, sc, row);
    ceb_event_unref(again);
    ceb_free(key);
    ceb_free(value);
    ceb_headers_clear(&h2);
  }
  ceb_event_unref(ev);
  ceb_headers_clear(&h);
  free(payload);
  return 1;
}

/* Runs every scenario instance; returns how many ran. */
static size_t run_feature(const char *path, int (*run)(const gk_scenario *,
                                                       size_t, const char *)) {
  gk_feature f;
  CHECK_INT(gk_parse_file(path, &f), 0);
  size_t ran = 0;
  for (size_t i = 0; i < f.count; i++) {
    const gk_scenario *sc = &f.scenario[i];
    size_t rows = sc->examples.rows > 1 ? sc->examples.rows - 1 : 1;
    for (size_t r = 1; r <= rows; r++) {
      char *title = gk_expand(sc->title, &sc->examples, r);
      int done = run(sc, r, title);
      CHECK_MSG(done, "%s: scenario not understood", title);
      ran += (size_t)done;
      free(title);
    }
  }
  gk_free(&f);
  return ran;
}

int main(void) {
  ceb_test_need_data(FEATURES);
  CHECK_INT(run_feature(FEATURES "http-protocol-binding.feature", run_http), 4);
  CHECK_INT(run_feature(FEATURES "kafka-protocol-binding.feature", run_kafka),
            3);
  return ceb_test_done("conformance_ce_features");
}
