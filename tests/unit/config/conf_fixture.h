/* Helpers for the config tests: config directories in $TMPDIR and lookups
 * in a ceb_conf_errors. */
#ifndef CONF_FIXTURE_H
#define CONF_FIXTURE_H

#include "config/ceb_conf.h"

/* Writes dir/name with text (aborts the test run on failure). */
void fx_write(const char *dir, const char *name, const char *text);
/* Removes dir and the regular files in it. */
void fx_rmdir(const char *dir);
/* Index of the first error whose file ends in file_suffix, whose line is
 * line, and whose message contains text; -1 when none. */
int fx_find(const ceb_conf_errors *errs, const char *file_suffix, int line,
            const char *text);
/* ceb_conf_errors_print output, malloc'd. */
char *fx_print(const ceb_conf_errors *errs);
/* Prints all errors to stderr (for failing checks). */
void fx_dump(const ceb_conf_errors *errs);

#endif
