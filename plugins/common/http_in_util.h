/* Small helpers of the intermediary: base64url, files, header tokens.
 * All functions are reentrant. */
#ifndef HTTP_IN_UTIL_H
#define HTTP_IN_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Decodes unpadded base64url (RFC 4648 section 5). CEB_OK with *out
 * malloc'd (NUL-terminated, caller frees with free()) or CEB_EINVAL. */
int http_b64url_decode(const char *text, size_t len, unsigned char **out,
                       size_t *out_len);
/* Encodes as unpadded base64url; malloc'd, NULL on allocation failure. */
char *http_b64url_encode(const void *data, size_t len);
/* Reads a whole file (at most max bytes) into a NUL-terminated malloc'd
 * buffer. CEB_OK, CEB_ENOTFOUND, CEB_ETOOLARGE or CEB_EIO. */
int http_file_read(const char *path, size_t max, char **out, size_t *len);
/* Writes text to path atomically (temp file + rename). */
int http_file_write(const char *path, const char *text);
/* Lower-case hex of n bytes into out (2n+1 bytes). */
void http_hex(const unsigned char *in, size_t n, char *out);
/* 1 when text matches a '|'-separated list of patterns: exact, "prefix*",
 * "*suffix" or "*". */
int http_pattern_match(const char *patterns, const char *text);

#endif
