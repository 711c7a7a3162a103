/* Ordered header list used for HTTP headers, Kafka headers and MQTT user
 * properties. */
#include "ceb_event_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ceb_headers_add(ceb_headers *h, const char *name, const char *value,
                    size_t value_len) {
  if (!h || !name || (!value && value_len)) return CEB_EINVAL;
  if (h->count == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 8;
    ceb_header *items = realloc(h->items, cap * sizeof *items);
    if (!items) return CEB_ENOMEM;
    h->items = items;
    h->cap = cap;
  }
  char *n = strdup(name);
  char *v = cebi_memdup(value ? value : "", value_len);
  if (!n || !v) {
    free(n);
    free(v);
    return CEB_ENOMEM;
  }
  h->items[h->count++] = (ceb_header){n, v, value_len};
  return CEB_OK;
}

const char *ceb_headers_get(const ceb_headers *h, const char *name) {
  if (!h || !name) return NULL;
  for (size_t i = 0; i < h->count; i++)
    if (strcasecmp(h->items[i].name, name) == 0) return h->items[i].value;
  return NULL;
}

void ceb_headers_clear(ceb_headers *h) {
  if (!h) return;
  for (size_t i = 0; i < h->count; i++) {
    free(h->items[i].name);
    free(h->items[i].value);
  }
  free(h->items);
  h->items = NULL;
  h->count = h->cap = 0;
}
