/* Every AsyncAPI 2.6.0 / 3.0.0 example of the spec repository and the
 * CloudEvents AsyncAPI examples load: parsed (YAML), bundled ($ref across
 * files; the CloudEvents spec's remote URLs are served from the local copy
 * of that repository), loaded as a contract with every JSON Schema payload
 * compiled. What is extracted is asserted for a few of them. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aa_doc.h"
#include "ceb_test.h"
#include "contracts/ceb_contract.h"

#define AA CEB_CONFORMANCE_DIR "/asyncapi"
#define CE CEB_CONFORMANCE_DIR "/cloudevents-spec"

static char *fetch(void *arg, const char *uri, size_t *len, char *err,
                   size_t errlen) {
  (void)arg;
  static const char *prefixes[] = {
      "https://raw.githubusercontent.com/cloudevents/spec/main/",
      "https://raw.githubusercontent.com/cloudevents/spec/v1.0.2/"};
  char path[1024];
  snprintf(path, sizeof path, "%s", uri);
  for (int i = 0; i < 2; i++)
    if (strncmp(uri, prefixes[i], strlen(prefixes[i])) == 0)
      snprintf(path, sizeof path, CE "/%s", uri + strlen(prefixes[i]));
  if (strstr(path, "://")) {
    snprintf(err, errlen, "no network in tests: %s", uri);
    return NULL;
  }
  char *t = ceb_test_read_file(path, len);
  if (!t) snprintf(err, errlen, "cannot read %s", path);
  return t;
}

static ceb_contract *load(const char *path, int *loaded) {
  size_t len = 0;
  char err[512] = "";
  char *text = ceb_test_read_file(path, &len);
  CHECK_MSG(text != NULL, "read %s", path);
  if (!text) return NULL;
  json_t *doc = aa_parse(text, len, err, sizeof err);
  free(text);
  CHECK_MSG(doc != NULL, "%s: %s", path, err);
  if (!doc) return NULL;
  aa_bundle_stats st;
  int rc = aa_bundle(doc, path, fetch, NULL, 32, &st, err, sizeof err);
  /* The adeo example's Avro payloads and the Kafka key binding point at
   * remote registries we cannot reach; they are not JSON Schema and are
   * not checked, but their refs cannot be bundled offline. */
  if (rc != 0 && strstr(path, "adeo-kafka") && strstr(err, "no network")) {
    json_decref(doc);
    return NULL;
  }
  CHECK_MSG(rc == 0, "%s: %s", path, err);
  char *out = rc == 0 ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(doc);
  if (!out) return NULL;
  ceb_contract *c = NULL;
  ceb_contract_opts o = {.compile = 1};
  CHECK_MSG(ceb_contract_load("x", out, strlen(out), &o, &c, err, sizeof err) ==
                CEB_OK,
            "%s: %s", path, err);
  free(out);
  for (size_t i = 0; c && i < c->nmsgs; i++)
    CHECK_MSG(!c->msgs[i].compile_failed, "%s message %s: %s", path,
              c->msgs[i].name, c->msgs[i].note);
  if (c) (*loaded)++;
  return c;
}

static void load_dir(const char *dir, int *loaded, int *seen) {
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "open %s", dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (e->d_type == DT_DIR) {
      if (strcmp(e->d_name, "common") != 0) /* fragments, not documents */
        load_dir(path, loaded, seen);
      continue;
    }
    size_t n = strlen(e->d_name);
    if (n < 5 || (strcmp(e->d_name + n - 4, ".yml") != 0 &&
                  strcmp(e->d_name + n - 5, ".yaml") != 0))
      continue;
    (*seen)++;
    ceb_contract_free(load(path, loaded));
  }
  if (d) closedir(d);
}

static const ceb_contract_msg *msg(const ceb_contract *c, const char *name) {
  const ceb_contract_msg *m = c ? ceb_contract_find_name(c, name) : NULL;
  CHECK_MSG(m != NULL, "message %s", name);
  return m;
}

int main(void) {
  ceb_test_need_data(AA);
  int loaded = 0, seen = 0;
  load_dir(AA "/examples-2.6.0", &loaded, &seen);
  load_dir(AA "/examples-3.0.0", &loaded, &seen);
  load_dir(CE "/cloudevents/working-drafts/asyncapi-examples", &loaded, &seen);
  CHECK_MSG(seen >= 45, "examples seen: %d", seen);
  CHECK_MSG(loaded >= seen - 1, "loaded %d of %d", loaded, seen);

  /* 2.6 streetlights: three messages, trait headers merged in, payload
   * compiled at its place in the document and checked. */
  ceb_contract *c = load(AA "/examples-2.6.0/streetlights-kafka.yml", &loaded);
  if (c) {
    CHECK_INT(c->nmsgs, 3);
    const ceb_contract_msg *m = msg(c, "lightMeasured");
    if (m) {
      CHECK_STR(m->payload_pointer,
                "/components/messages/lightMeasured/payload");
      CHECK_STR(m->content_type, "application/json");
      CHECK_STR(m->channel, "smartylighting.streetlights.1.0.event."
                            "{streetlightId}.lighting.measured");
      CHECK_STR(m->operation, "publish");
      json_t *h = json_object_get(
          json_object_get(json_object_get(m->merged, "headers"), "properties"),
          "my-app-header");
      CHECK_MSG(h != NULL, "trait headers merged");
      CHECK(json_object_get(m->merged, "traits") == NULL);
      json_t *ok = json_loads("{\"lumens\":3,\"sentAt\":"
                              "\"2026-01-01T00:00:00Z\"}",
                              0, NULL);
      json_t *bad =
          json_loads("{\"lumens\":-3,\"sentAt\":\"yesterday\"}", 0, NULL);
      ceb_schema_result r;
      CHECK_INT(ceb_schema_validate(m->payload, ok, &r), 1);
      CHECK_INT(ceb_schema_validate(m->payload, bad, &r), 0);
      CHECK_INT(r.count, 2);
      json_decref(ok);
      json_decref(bad);
    }
    msg(c, "turnOnOff");
    msg(c, "dimLight");
    ceb_contract_free(c);
  }
  /* 2.6 oneOf on one channel. */
  c = load(AA "/examples-2.6.0/oneof.yml", &loaded);
  if (c) {
    CHECK_INT(c->nmsgs, 5); /* 1 + 2 inline oneOf + 2 only in components */
    const ceb_contract_msg *a = msg(c, "testMessages");
    if (a) CHECK_STR(a->channel, "test");
    size_t n2 = 0;
    for (size_t i = 0; i < c->nmsgs; i++)
      n2 += c->msgs[i].channel && strcmp(c->msgs[i].channel, "test2") == 0;
    CHECK_INT(n2, 2);
    ceb_contract_free(c);
  }
  /* 2.6 multi-file: messages from ../common/messages.yaml. */
  c = load(AA "/examples-2.6.0/social-media/backend/asyncapi.yaml", &loaded);
  if (c) {
    CHECK_INT(c->nmsgs, 4);
    const ceb_contract_msg *m = msg(c, "commentLiked");
    if (m) CHECK_STR(m->channel, "comment/liked");
    ceb_contract_free(c);
  }
  /* 3.0 streetlights: operations and channels, trait never overrides. */
  c = load(AA "/examples-3.0.0/streetlights-kafka-asyncapi.yml", &loaded);
  if (c) {
    CHECK_INT(c->nmsgs, 3);
    const ceb_contract_msg *m = msg(c, "lightMeasured");
    if (m) {
      CHECK_STR(m->channel, "smartylighting.streetlights.1.0.event."
                            "{streetlightId}.lighting.measured");
      CHECK_STR(m->operation, "receiveLightMeasurement");
      CHECK(
          json_object_get(json_object_get(json_object_get(m->merged, "headers"),
                                          "properties"),
                          "my-app-header") != NULL);
      CHECK(m->payload != NULL);
    }
    ceb_contract_free(c);
  }
  /* CloudEvents binary-mode example: the trait from the CloudEvents spec
   * (fetched by URL) brings the ce_ headers. */
  c = load(CE "/cloudevents/working-drafts/asyncapi-examples/"
              "light-switch-events-binary-kafka.yaml",
           &loaded);
  if (c) {
    const ceb_contract_msg *m = msg(c, "lightSwitchChanged");
    if (m) {
      json_t *props =
          json_object_get(json_object_get(m->merged, "headers"), "properties");
      CHECK(json_object_get(props, "ce_type") != NULL);
      CHECK(m->payload != NULL);
    }
    ceb_contract_free(c);
  }
  c = load(CE "/cloudevents/working-drafts/asyncapi-examples/"
              "light-switch-events-structured-json.yaml",
           &loaded);
  if (c) {
    const ceb_contract_msg *m = msg(c, "lightSwitchChanged");
    if (m) {
      CHECK(m->envelope); /* the payload is the whole CloudEvent */
      CHECK(m->payload != NULL);
    }
    ceb_contract_free(c);
  }
  return ceb_test_done("conformance_asyncapi_examples");
}
