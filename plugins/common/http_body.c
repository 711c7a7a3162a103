#include "http_body.h"

#include <stdlib.h>
#include <string.h>

size_t http_body_write(char *ptr, size_t size, size_t nmemb, void *arg) {
  http_body *b = arg;
  size_t n = size * nmemb;
  if (b->len + n > b->max) {
    b->too_large = 1;
    return 0; /* aborts the transfer */
  }
  char *nd = realloc(b->data, b->len + n + 1);
  if (!nd) return 0;
  memcpy(nd + b->len, ptr, n);
  b->data = nd;
  b->len += n;
  b->data[b->len] = '\0';
  return n;
}
