/* Text helpers of mappings, shared by the worker and the host: the module
 * directive check (a mapping reads no file) and jq's compile messages.
 * Pure functions on their arguments, any thread. */
#ifndef CEB_MAPPING_TEXT_H
#define CEB_MAPPING_TEXT_H

#include <stddef.h>

/* 1 (why filled) when the program starts with a module directive (import,
 * include or module, which jq 1.6 allows only before everything else and
 * which read files), else 0. Comments and whitespace are skipped. */
int cebm_text_has_module_directive(const char *text, char *why, size_t cap);

/* A jq compile message ("jq: error: syntax error, ... at <top-level>,
 * line 3:\n<the line>"): the line it names (1-based), or 0. */
int cebm_error_line(const char *msg);

/* The message as one line: its first line without jq's "jq: error: "
 * prefix, nor the " at <top-level>, line N:" tail (the caller reports the
 * place as file:line). */
void cebm_error_tidy(const char *msg, char *out, size_t cap);

#endif
