/* JSON batch format (application/cloudevents-batch+json): an array of
 * JSON-format events sharing one specversion. */
#include "ceb_event_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void ceb_events_free(ceb_event **events, size_t count) {
  if (!events) return;
  for (size_t i = 0; i < count; i++)
    ceb_event_unref(events[i]);
  free(events);
}

static int element_fail(ceb_error *err, size_t i) {
  if (err) err->index = (int)i;
  return err ? err->status : CEB_EINVAL;
}

int ceb_batch_decode(const char *buf, size_t len, ceb_event ***events,
                     size_t *count, ceb_error *err) {
  ceb_error_clear(err);
  if (!events || !count || (!buf && len))
    return cebi_fail(err, CEB_EINVAL, "ce.arg", "invalid argument");
  *events = NULL;
  *count = 0;
  json_error_t jerr;
  json_t *arr = json_loadb(buf ? buf : "", len, JSON_REJECT_DUPLICATES, &jerr);
  if (!arr)
    return cebi_fail(err, CEB_EINVAL, "ce.json.malformed",
                     "malformed JSON at line %d column %d: %s", jerr.line,
                     jerr.column, jerr.text);
  if (!json_is_array(arr)) {
    json_decref(arr);
    return cebi_fail(err, CEB_EINVAL, "ce.batch.not_array",
                     "a batch must be a JSON array");
  }
  size_t n = json_array_size(arr);
  ceb_event **evs = calloc(n ? n : 1, sizeof *evs);
  if (!evs) {
    json_decref(arr);
    return cebi_fail(err, CEB_ENOMEM, "ce.nomem", "out of memory");
  }
  int rc = CEB_OK;
  const char *first_version = NULL;
  size_t i;
  for (i = 0; i < n; i++) {
    json_t *el = json_array_get(arr, i);
    if (!json_is_object(el)) {
      cebi_fail(err, CEB_EINVAL, "ce.batch.not_object",
                "batch element %zu is not a JSON object", i);
      rc = element_fail(err, i);
      break;
    }
    /* The batch shares one specversion; report a mix as a batch error even
     * before the per-event check says which version is unsupported. */
    json_t *sv = json_object_get(el, "specversion");
    const char *version = json_is_string(sv) ? json_string_value(sv) : NULL;
    if (version && !first_version)
      first_version = version;
    else if (version && strcmp(version, first_version) != 0) {
      cebi_fail(err, CEB_EINVAL, "ce.batch.mixed_specversion",
                "batch element %zu has specversion '%.16s', expected '%.16s'",
                i, version, first_version);
      rc = element_fail(err, i);
      break;
    }
    if ((rc = cebi_json_decode_object(el, &evs[i], err)) != CEB_OK) {
      element_fail(err, i);
      break;
    }
  }
  json_decref(arr);
  if (rc != CEB_OK) {
    ceb_events_free(evs, i);
    return rc;
  }
  *events = evs;
  *count = n;
  return CEB_OK;
}

int ceb_batch_encode(ceb_event *const *events, size_t count, char **out,
                     size_t *out_len) {
  if (!out || (!events && count)) return CEB_EINVAL;
  *out = NULL;
  json_t *arr = json_array();
  if (!arr) return CEB_ENOMEM;
  int rc = CEB_OK;
  for (size_t i = 0; i < count && rc == CEB_OK; i++) {
    json_t *obj = events[i] ? cebi_json_encode_object(events[i], &rc) : NULL;
    if (!events[i])
      rc = CEB_EINVAL;
    else if (obj && json_array_append_new(arr, obj) != 0)
      rc = CEB_ENOMEM;
  }
  if (rc == CEB_OK) rc = cebi_json_dump(arr, out, out_len);
  json_decref(arr);
  return rc;
}
