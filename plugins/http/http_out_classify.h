/* Outcome of one webhook response, per the delivery rules: 2xx ACK; 408,
 * 425, 429, 5xx, network errors and timeouts RETRY (Retry-After honoured);
 * 409 by its problem: "already processed" ACK, anything else RETRY;
 * 410 REJECT and open the circuit; any other status REJECT (DLQ).
 * Pure functions, thread-safe. */
#ifndef HTTP_OUT_CLASSIFY_H
#define HTTP_OUT_CLASSIFY_H

#include <stdint.h>

#include <ceb/plugin.h>

/* Milliseconds a Retry-After value asks for (delta-seconds or HTTP-date,
 * relative to now_ms and never negative), or -1 when absent or malformed. */
int64_t http_sink_retry_after_ms(const char *value, int64_t now_ms);

typedef enum http_sink_409 {
  HTTP_SINK_409_UNKNOWN = 0,   /* no problem+json, or a meaning not known */
  HTTP_SINK_409_PROCESSED = 1, /* the receiver already has it */
  HTTP_SINK_409_IN_FLIGHT = 2  /* the same key is still being processed */
} http_sink_409;

/* What a 409 response body (problem+json, RFC 9457) says, from the last
 * segment of its "type" URI or its "code": "...in_flight", "in-progress",
 * "concurrent" ... IN_FLIGHT; "...replayed", "already_processed",
 * "duplicate" ... PROCESSED. body may be NULL or truncated (UNKNOWN). */
http_sink_409 http_sink_conflict_kind(const char *body);

/* Fills info (outcome, status_code, retry_after_ms, flags) and reason
 * ("http.503"; a buffer of at least 16 bytes that info->reason points to)
 * for an HTTP status. retry_after and body (the response, NUL-terminated,
 * read for 409) may be NULL. */
void http_sink_classify(long status, const char *retry_after, const char *body,
                        int64_t now_ms, ceb_settle_info *info, char *reason,
                        size_t reason_size);

#endif
