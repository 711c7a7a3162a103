/* The webhook sink's pacing toward a receiver that announced a rate in the
 * CloudEvents webhook validation handshake (CloudEvents HTTP webhook spec,
 * section 4.2: `WebHook-Allowed-Rate`, requests per minute, or `*`).
 *
 * The announced rate is enforced as a sliding window: at most n requests
 * in any window_ms, where R/min becomes n = R/60 per second (R >= 60) or 1
 * per 60/R seconds (R < 60), so a receiver that counts per second never
 * sees a burst a per-minute budget would allow. The window is 10 % longer
 * than that: the receiver counts arrivals, and network and scheduling
 * jitter can bring two requests closer than they were sent. The rate only
 * ever lowers what the sink sends: an announced rate at or above the
 * configured rate_limit (which the host's token bucket enforces anyway)
 * sets no window.
 *
 * Threading: the sink's loop thread only. */
#ifndef HTTP_OUT_PACE_H
#define HTTP_OUT_PACE_H

#include <stddef.h>
#include <stdint.h>

/* Longest window kept, in requests (a receiver allowing more than
 * 600,000 a minute is paced at 10,000 a second). */
#define HTTP_PACE_MAX_N 10000

typedef struct http_pace {
  int64_t per_minute; /* the announced rate; 0: no window */
  int64_t window_ms;
  size_t n;
  int64_t *sent; /* ring of the last n send times (mono ms) */
  size_t head, count;
} http_pace;

typedef enum http_pace_result {
  HTTP_PACE_NONE = 0,    /* no header, or "*": no window */
  HTTP_PACE_SET = 1,     /* a window of the announced rate */
  HTTP_PACE_ABOVE = 2,   /* announced >= configured: no window */
  HTTP_PACE_INVALID = -1 /* not a positive integer: ignored, no window */
} http_pace_result;

/* Sets p from the value of a handshake's WebHook-Allowed-Rate header
 * (NULL or "" when absent) and the configured rate_limit (per second; <= 0
 * when unset). Send times of the previous window are kept when the new one
 * still covers them. CEB_ENOMEM leaves p without a window. */
http_pace_result http_pace_set(http_pace *p, const char *allowed_rate,
                               double configured_per_s);
/* Milliseconds until the next request may go at now_ms (0: now). */
int64_t http_pace_wait_ms(const http_pace *p, int64_t now_ms);
/* A request went out at now_ms. */
void http_pace_sent(http_pace *p, int64_t now_ms);
void http_pace_free(http_pace *p);

#endif
