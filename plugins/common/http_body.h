/* A response body libcurl collects with a size bound: the write callback
 * the JWKS fetch, the OAuth2 token request and the AsyncAPI registry fetch
 * share. A body past max aborts the transfer (CURLE_WRITE_ERROR) and sets
 * too_large, so the caller can say why. Owned by the caller (one transfer,
 * one thread). */
#ifndef CEB_HTTP_BODY_H
#define CEB_HTTP_BODY_H

#include <stddef.h>

typedef struct http_body {
  char *data;    /* malloc'd, NUL-terminated; NULL until a byte came; the
                    caller frees it */
  size_t len;    /* bytes in data, without the NUL */
  size_t max;    /* the bound */
  int too_large; /* the body passed max: the transfer was aborted */
} http_body;

/* CURLOPT_WRITEFUNCTION with an http_body as CURLOPT_WRITEDATA. */
size_t http_body_write(char *ptr, size_t size, size_t nmemb, void *arg);

#endif
