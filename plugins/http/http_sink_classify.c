/* HTTP status -> settle outcome, and Retry-After parsing. */
#include "http_sink_classify.h"

#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

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

void http_sink_classify(long status, const char *retry_after, int64_t now_ms,
                        ceb_settle_info *info, char *reason,
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
  } else if (status == 410) {
    info->outcome = CEB_REJECT;
    info->flags = CEB_SETTLE_OPEN_CIRCUIT;
  } else {
    info->outcome = CEB_REJECT;
  }
}
