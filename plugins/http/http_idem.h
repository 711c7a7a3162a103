/* Idempotency-Key helpers (draft-ietf-httpapi-idempotency-key-header,
 * Edukoppeling annex B): the key is a UUID v4, sent as a structured-field
 * string ("...") or bare; the fingerprint binds the key to one request.
 * Pure functions, reentrant. */
#ifndef HTTP_IDEM_H
#define HTTP_IDEM_H

#include <stddef.h>

#include <ceb/ceb.h>

#define HTTP_IDEM_KEY_LEN 36
#define HTTP_FINGERPRINT_LEN 64

/* Extracts a UUID v4 (RFC 4122 version 4, variant 10xx) from the header
 * value into key (lower-cased, 37 bytes). CEB_OK or CEB_EINVAL. */
int http_idem_key_parse(const char *header, char key[HTTP_IDEM_KEY_LEN + 1]);

/* sha256 (hex) over method, path, content type, the ce-* headers (binary
 * mode: they carry the event) sorted by name, and the body. */
int http_idem_fingerprint(const char *method, const char *path,
                          const ceb_headers *headers, const void *body,
                          size_t len, char out[HTTP_FINGERPRINT_LEN + 1]);

#endif
