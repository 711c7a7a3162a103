/* The fake host's stand-in map function (ceb_fake_map.h). */
#include "ceb_fake_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static ceb_event *event_of(const char *id, const char *data, size_t len,
                           ceb_data_kind kind) {
  ceb_event *ev = ceb_event_new();
  if (!ev) return NULL;
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", id);
  ceb_event_set(ev, "source", CEB_FAKE_MAP_SOURCE);
  ceb_event_set(ev, "type", "nl.edu.mapped");
  ceb_event_set(ev, "datacontenttype",
                kind == CEB_DATA_JSON ? "application/json" : "text/plain");
  ceb_event_set_data(ev, data, len, kind);
  return ev;
}

static int one(json_t *obj, ceb_event **out, char *err, size_t errlen) {
  const char *fail = json_string_value(json_object_get(obj, "fail"));
  if (fail) {
    snprintf(err, errlen, "mapping: %s", fail);
    return CEB_EMAPPING;
  }
  const char *id = json_string_value(json_object_get(obj, "id"));
  if (!id) {
    snprintf(err, errlen, "mapping: no id");
    return CEB_EMAPPING;
  }
  char *data = json_dumps(obj, JSON_COMPACT);
  *out = data ? event_of(id, data, strlen(data), CEB_DATA_JSON) : NULL;
  free(data);
  return *out ? CEB_OK : CEB_ENOMEM;
}

int ceb_fake_map_payload(void *arg, const char *doc, size_t len,
                         ceb_event **out, size_t max, size_t *n, char *err,
                         size_t errlen) {
  *n = 0;
  json_t *d = json_loadb(doc, len, 0, NULL);
  if (!json_is_object(d)) {
    json_decref(d);
    snprintf(err, errlen, "the input document is not a JSON object");
    return CEB_EINVAL;
  }
  json_t *p = json_object_get(d, arg);
  int st = CEB_OK;
  if (json_is_object(p)) {
    st = one(p, &out[0], err, errlen);
    *n = st == CEB_OK;
  } else if (json_is_array(p)) {
    size_t i;
    json_t *el;
    json_array_foreach(p, i, el) {
      if (st != CEB_OK || *n == max) break;
      st = json_is_object(el) ? one(el, &out[*n], err, errlen) : CEB_EMAPPING;
      if (st == CEB_OK) (*n)++;
    }
  } else {
    char id[32];
    snprintf(id, sizeof id, "mapped-%zu", len);
    const char *text = json_is_string(p) ? json_string_value(p) : "";
    out[0] = event_of(id, text, strlen(text), CEB_DATA_TEXT);
    st = out[0] ? CEB_OK : CEB_ENOMEM;
    *n = st == CEB_OK;
  }
  if (st != CEB_OK) {
    for (size_t i = 0; i < *n; i++)
      ceb_event_unref(out[i]);
    *n = 0;
  }
  json_decref(d);
  return st;
}
