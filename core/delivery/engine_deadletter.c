/* Building dead-letter and receipt events (see ceb_deadletter.h); sending
 * dead letters to a DLQ sink is engine_dlq_forward.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>
#include <jansson.h>

#include "delivery/ceb_deadletter.h"
#include "delivery/engine_internal.h"

static void set_time(ceb_event *ev, const char *name, int64_t ms) {
  char buf[40];
  ceb_timestamp_format(ms, buf, sizeof buf);
  ceb_event_set(ev, name, buf);
}

char *cebe_dead_json(const ceb_event *orig, const char *route, const char *sink,
                     const char *dead_reason, const ceb_settle_info *info,
                     uint32_t attempts, int64_t first_at, int64_t last_at) {
  ceb_event *ev = ceb_event_clone(orig);
  if (!ev) return NULL;
  char num[24];
  ceb_event_set(ev, CEB_DL_ROUTE, route);
  ceb_event_set(ev, CEB_DL_SINK, sink);
  ceb_event_set(ev, CEB_DL_REASON, dead_reason);
  if (info->reason) ceb_event_set(ev, CEB_DL_CAUSE, info->reason);
  if (info->status_code) {
    snprintf(num, sizeof num, "%d", info->status_code);
    ceb_event_set_typed(ev, CEB_DL_STATUS, CEB_ATTR_INTEGER, num);
  }
  snprintf(num, sizeof num, "%u", attempts);
  ceb_event_set_typed(ev, CEB_DL_ATTEMPTS, CEB_ATTR_INTEGER, num);
  set_time(ev, CEB_DL_FIRST_AT, first_at);
  set_time(ev, CEB_DL_LAST_AT, last_at);
  if (info->detail) {
    char err[CEB_DL_ERROR_MAX + 1];
    size_t n = strlen(info->detail);
    if (n > CEB_DL_ERROR_MAX) {
      n = CEB_DL_ERROR_MAX;
      while (n > 0 && ((unsigned char)info->detail[n] & 0xC0) == 0x80)
        n--; /* never cut a UTF-8 sequence */
    }
    memcpy(err, info->detail, n);
    err[n] = '\0';
    ceb_event_set(ev, CEB_DL_ERROR, err);
  }
  char *out = NULL;
  size_t len = 0;
  char *copy = NULL;
  if (ceb_json_encode(ev, &out, &len) == CEB_OK) {
    copy = strndup(out, len);
    ceb_free(out);
  }
  ceb_event_unref(ev);
  return copy;
}

ceb_event *cebe_receipt(const ceb_event *orig, const char *route,
                        const char *prefix, int64_t seq, int done,
                        uint32_t attempts, const char *reason, int64_t now) {
  ceb_event *ev = ceb_event_new();
  if (!ev) return NULL;
  char buf[512];
  const char *oid = ceb_event_get(orig, "id");
  snprintf(buf, sizeof buf, "%s.%lld.%s", route, (long long)seq,
           done ? "done" : "failed");
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", buf);
  ceb_event_set(ev, "source", CEB_RECEIPT_SOURCE);
  snprintf(buf, sizeof buf, "%s.%s", prefix, done ? "done" : "failed");
  ceb_event_set(ev, "type", buf);
  if (oid) ceb_event_set(ev, "subject", oid);
  set_time(ev, "time", now);
  ceb_event_set(ev, "datacontenttype", "application/json");
  json_t *data = json_pack(
      "{ss ss ss ss ss sI ss}", "route", route, "id", oid ? oid : "", "source",
      ceb_event_get(orig, "source") ? ceb_event_get(orig, "source") : "",
      "type", ceb_event_get(orig, "type") ? ceb_event_get(orig, "type") : "",
      "state", done ? "done" : "dead", "attempts", (json_int_t)attempts,
      "reason", reason ? reason : "");
  char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
  json_decref(data);
  if (!text) {
    ceb_event_unref(ev);
    return NULL;
  }
  ceb_event_set_data(ev, text, strlen(text), CEB_DATA_JSON);
  free(text);
  return ev;
}
