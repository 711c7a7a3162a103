/* Escaping of log fields and messages, so that text from outside (event
 * ids, token kids, client names, error texts) can never start a line of its
 * own, move the terminal, or break a JSON record.
 *
 * Written as backslash escapes: \n \r \t \\, other C0 bytes and DEL as
 * \xNN, C1 controls (U+0080..U+009F), the line and paragraph separators
 * (U+2028, U+2029) and the bidirectional overrides (U+202A..U+202E,
 * U+2066..U+2069) as \uNNNN, and each byte that is not part of well-formed
 * UTF-8 as \xNN. The result is valid UTF-8 with no control character. In
 * quote mode (a text-format field) a value that is empty or holds a space,
 * '"' or '=' is put in double quotes with '"' written as \". Pure; any
 * thread. */
#ifndef CEB_LOG_ESCAPE_H
#define CEB_LOG_ESCAPE_H

#include <stddef.h>

/* Bytes the escaped form of n input bytes may take, NUL included. */
#define CEB_LOG_ESCAPED_MAX(n) ((n)*4 + 3)

/* Writes the escaped form of s (len bytes) to out, which holds at least
 * CEB_LOG_ESCAPED_MAX(len) bytes; returns its length (out is
 * NUL-terminated). quote: 1 for a text-format field value. */
size_t ceb_log_escape(const char *s, size_t len, int quote, char *out);

/* The same into a malloc'd string; NULL on ENOMEM. */
char *ceb_log_escape_dup(const char *s, int quote);

#endif
