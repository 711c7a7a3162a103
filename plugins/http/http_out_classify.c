/* HTTP status -> settle outcome, and Retry-After parsing. */
#include "http_out_classify.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

int64_t http_sink_retry_after_ms(const char *value, int64_t now_ms) {
  if (!value) return -1;
  while (*value == ' ' || *value == '\t')
    value++;
  if (!*value) return -1;
  if (*value >= '0' && *value <= '9') {
    int64_t s = 0;
    const char *p = value;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (s > INT64_MAX / 10000) return -1; /* absurd; treat as malformed */
      s = s * 10 + (*p - '0');
    }
    while (*p == ' ' || *p == '\t')
      p++;
    return *p ? -1 : s * 1000;
  }
  /* IMF-fixdate and the obsolete forms; curl_getdate parses all three. */
  time_t when = curl_getdate(value, NULL);
  if (when == (time_t)-1) return -1;
  int64_t ms = (int64_t)when * 1000 - now_ms;
  return ms > 0 ? ms : 0;
}

/* The meaning of a problem+json type or code: its last segment (after the
 * last ':', '/' or '#'), lower-cased, '-' and '.' read as '_'. */
static void problem_word(const char *v, char *out, size_t n) {
  out[0] = '\0';
  if (!v || n == 0) return;
  const char *seg = v;
  for (const char *p = v; *p; p++)
    if (*p == ':' || *p == '/' || *p == '#') seg = p + 1;
  size_t i = 0;
  for (; seg[i] && i + 1 < n; i++) {
    char c = (char)tolower((unsigned char)seg[i]);
    out[i] = c == '-' || c == '.' ? '_' : c;
  }
  out[i] = '\0';
}

static int word_has(const char *w, const char *const *list) {
  for (size_t i = 0; list[i]; i++)
    if (*w && strstr(w, list[i])) return 1;
  return 0;
}

http_sink_409 http_sink_conflict_kind(const char *body) {
  /* "The receiver has it": cebridge's webhook.replayed (the webhook-id was
   * accepted before) and the usual names of an already-processed key. */
  static const char *const done[] = {"already_processed", "already_accepted",
                                     "already_received",  "replayed",
                                     "duplicate",         NULL};
  /* "Still being processed": the Idempotency-Key annex's 409 (cebridge's
   * idempotency.in_flight) under the names receivers give it. */
  static const char *const busy[] = {"in_flight",  "in_progress", "inflight",
                                     "concurrent", "outstanding", "processing",
                                     NULL};
  if (!body || !*body) return HTTP_SINK_409_UNKNOWN;
  json_t *doc = json_loads(body, 0, NULL);
  if (!json_is_object(doc)) {
    json_decref(doc);
    return HTTP_SINK_409_UNKNOWN;
  }
  const char *fields[] = {"type", "code"};
  http_sink_409 kind = HTTP_SINK_409_UNKNOWN;
  for (size_t i = 0; i < 2 && kind == HTTP_SINK_409_UNKNOWN; i++) {
    char w[128];
    problem_word(json_string_value(json_object_get(doc, fields[i])), w,
                 sizeof(w));
    if (word_has(w, busy))
      kind = HTTP_SINK_409_IN_FLIGHT;
    else if (word_has(w, done))
      kind = HTTP_SINK_409_PROCESSED;
  }
  json_decref(doc);
  return kind;
}

void http_sink_classify(long status, const char *retry_after, const char *body,
                        int64_t now_ms, ceb_settle_info *info, char *reason,
                        size_t reason_size) {
  info->status_code = (int)status;
  info->retry_after_ms = -1;
  info->flags = 0;
  snprintf(reason, reason_size, "http.%ld", status);
  info->reason = reason;
  if (status >= 200 && status <= 299) {
    info->outcome = CEB_ACK;
  } else if (status == 408 || status == 425 || status == 429 ||
             (status >= 500 && status <= 599)) {
    info->outcome = CEB_RETRY;
    info->retry_after_ms = http_sink_retry_after_ms(retry_after, now_ms);
  } else if (status == 409) {
    /* The receiver's problem says whether it has the event (ACK: a resend
     * would be a duplicate) or is still processing it (RETRY). Any other
     * 409 is retried too: with an Idempotency-Key on every request the
     * annex's 409 means "in progress", and the retry schedule still ends
     * in the DLQ if the conflict never clears. */
    if (http_sink_conflict_kind(body) == HTTP_SINK_409_PROCESSED) {
      info->outcome = CEB_ACK;
    } else {
      info->outcome = CEB_RETRY;
      info->retry_after_ms = http_sink_retry_after_ms(retry_after, now_ms);
    }
  } else if (status == 410) {
    info->outcome = CEB_REJECT;
    info->flags = CEB_SETTLE_OPEN_CIRCUIT;
  } else {
    info->outcome = CEB_REJECT;
  }
}
