/* Sliding-window pacing of the webhook sink (http_out_pace.h). Hand-written:
 * a ring of send times is a few lines, and no packaged library paces a
 * curl multi loop. */
#include "http_out_pace.h"

#include <stdlib.h>
#include <string.h>

/* The receiver's per-minute budget, spread at the granularity of one
 * second, plus 10 % for the jitter between sending and arrival. */
static void window_of(int64_t per_minute, size_t *n, int64_t *window_ms) {
  if (per_minute >= 60) {
    int64_t per_s = per_minute / 60;
    *n = per_s > HTTP_PACE_MAX_N ? HTTP_PACE_MAX_N : (size_t)per_s;
    *window_ms = 1000;
  } else {
    *n = 1;
    *window_ms = (60000 + per_minute - 1) / per_minute;
  }
  *window_ms += *window_ms / 10;
}

static void clear(http_pace *p) {
  free(p->sent);
  memset(p, 0, sizeof *p);
}

http_pace_result http_pace_set(http_pace *p, const char *allowed_rate,
                               double configured_per_s) {
  if (!allowed_rate || !*allowed_rate || strcmp(allowed_rate, "*") == 0) {
    clear(p);
    return HTTP_PACE_NONE;
  }
  int64_t r = 0;
  for (const char *c = allowed_rate; *c; c++) {
    if (*c < '0' || *c > '9' || r > 1000000000) {
      clear(p);
      return HTTP_PACE_INVALID;
    }
    r = r * 10 + (*c - '0');
  }
  if (r <= 0) {
    clear(p);
    return HTTP_PACE_INVALID;
  }
  if (configured_per_s > 0 && (double)r / 60.0 >= configured_per_s) {
    clear(p);
    return HTTP_PACE_ABOVE;
  }
  size_t n;
  int64_t window_ms;
  window_of(r, &n, &window_ms);
  if (p->sent && p->n == n) { /* the same window: keep its history */
    p->per_minute = r;
    p->window_ms = window_ms;
    return HTTP_PACE_SET;
  }
  int64_t *sent = calloc(n, sizeof *sent);
  clear(p);
  if (!sent) return HTTP_PACE_NONE;
  p->per_minute = r;
  p->n = n;
  p->window_ms = window_ms;
  p->sent = sent;
  return HTTP_PACE_SET;
}

int64_t http_pace_wait_ms(const http_pace *p, int64_t now_ms) {
  if (!p->sent || p->count < p->n) return 0;
  /* full: the oldest of the last n must have left the window */
  int64_t oldest = p->sent[p->head];
  int64_t free_at = oldest + p->window_ms;
  return free_at > now_ms ? free_at - now_ms : 0;
}

void http_pace_sent(http_pace *p, int64_t now_ms) {
  if (!p->sent) return;
  if (p->count < p->n) {
    p->sent[(p->head + p->count) % p->n] = now_ms;
    p->count++;
  } else {
    p->sent[p->head] = now_ms;
    p->head = (p->head + 1) % p->n;
  }
}

void http_pace_free(http_pace *p) {
  clear(p);
}
