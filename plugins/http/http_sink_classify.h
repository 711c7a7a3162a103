/* Outcome of one webhook response, per the delivery rules: 2xx ACK; 408,
 * 425, 429, 5xx, network errors and timeouts RETRY (Retry-After honoured);
 * 410 REJECT and open the circuit; any other status REJECT (DLQ).
 * Pure functions, thread-safe. */
#ifndef HTTP_SINK_CLASSIFY_H
#define HTTP_SINK_CLASSIFY_H

#include <stdint.h>

#include <ceb/plugin.h>

/* Milliseconds a Retry-After value asks for (delta-seconds or HTTP-date,
 * relative to now_ms and never negative), or -1 when absent or malformed. */
int64_t http_sink_retry_after_ms(const char *value, int64_t now_ms);

/* Fills info (outcome, status_code, retry_after_ms, flags) and reason
 * ("http.503"; a buffer of at least 16 bytes that info->reason points to)
 * for an HTTP status. retry_after may be NULL. */
void http_sink_classify(long status, const char *retry_after, int64_t now_ms,
                        ceb_settle_info *info, char *reason,
                        size_t reason_size);

#endif
