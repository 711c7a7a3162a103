/* Parser for a raw HTTP request dump, as used by `cebridge event validate`,
 * the conformance feature files and the fuzz corpus:
 *
 *   [METHOD target HTTP/1.x]      optional request line
 *   Name: value                   header lines (CRLF or LF)
 *                                 blank line
 *   body                          everything after the blank line
 *
 * Content-Length is kept as a header but not applied: dumps are often edited
 * by hand, so the body is simply the rest of the input. */
#ifndef CEB_HTTP_DUMP_H
#define CEB_HTTP_DUMP_H

#include <ceb/codec.h>

#include <stddef.h>

/* Parses buf[0..len). Appends headers (names and values copied, values with
 * surrounding blanks trimmed) to *headers and sets *body_offset so that the
 * body is buf + *body_offset, len - *body_offset bytes. Returns CEB_EINVAL
 * with err filled (code "http.dump.*", message naming the line) on a
 * malformed header line; *headers is then cleared. Reentrant. */
int ceb_http_dump_parse(const char *buf, size_t len, ceb_headers *headers,
                        size_t *body_offset, ceb_error *err);

#endif
