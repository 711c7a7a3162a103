/* Helpers of the mapping end-to-end tests: a ready mapping of
 * contrib/mappings/ copied into a test's config directory with its
 * configured definitions set (as an operator copies and edits one). */
#ifndef MAP_TEST_UTIL_H
#define MAP_TEST_UTIL_H

#include <stddef.h>

/* Copies contrib/mappings/<name> to dir/<name>, replacing each line that
 * starts with "def <defs[i]>:" by "def <defs[i]>: <defs[i+1]>;" (defs:
 * name, jq value pairs, NULL-terminated). 0, or -1 (printed) when the file
 * is missing or a definition is not in it. */
int map_copy_ready(const char *dir, const char *name, const char *const *defs);

/* The whole of a file under the source tree (tests/data/...), malloc'd and
 * NUL-terminated; *len its length. NULL (printed) when missing. */
char *map_read_source(const char *rel, size_t *len);

#endif
