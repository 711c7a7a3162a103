#include <string.h>

#include "router/ceb_route.h"

static int match_one(const char *p, size_t plen, const char *v) {
  size_t vlen = strlen(v);
  if (plen == 1 && p[0] == '*') return 1;
  if (plen > 0 && p[plen - 1] == '*')
    return vlen >= plen - 1 && memcmp(v, p, plen - 1) == 0;
  if (plen > 0 && p[0] == '*')
    return vlen >= plen - 1 &&
           memcmp(v + vlen - (plen - 1), p + 1, plen - 1) == 0;
  return vlen == plen && memcmp(v, p, plen) == 0;
}

int ceb_pattern_match(const char *pattern, const char *value) {
  if (!pattern || !value) return 0;
  const char *p = pattern;
  for (;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (match_one(p, len, value)) return 1;
    if (!bar) return 0;
    p = bar + 1;
  }
}

int ceb_route_matches(const ceb_route *r, const char *source,
                      const ceb_event *ev) {
  if (r->callbacks) return 0; /* its deliveries are queued by the store */
  int from = 0;
  for (size_t i = 0; i < r->nfrom && !from; i++)
    from = source && strcmp(r->from[i], source) == 0;
  if (!from) return 0;
  for (size_t i = 0; i < r->nmatch; i++) {
    const char *v = ceb_event_get(ev, r->match[i].attr);
    int ok = 0;
    for (size_t a = 0; v && a < r->match[i].nalts && !ok; a++)
      ok = ceb_pattern_match(r->match[i].alts[a], v);
    if (!ok) return 0;
  }
  return 1;
}

const char *ceb_route_order_key(const ceb_route *r, const ceb_event *ev) {
  return r->order_by ? ceb_event_get(ev, r->order_by) : NULL;
}
