/* In-tree scripted source for core tests. Linked into a test, the test
 * submits through it (testsource_submit waits for the durable callback).
 * As a plugin (testsource.so) with `count = N` it submits N events
 * (id "<name>-<i>", type `type`, partitionkey "k<i % keys>") at start, one
 * at a time, and appends each acknowledged id to `record` (flushed and
 * fsync'd before the next submit: an id in the file was acknowledged).
 *
 * Thread-safety: testsource_* functions are thread-safe. */
#ifndef CEB_TESTSOURCE_H
#define CEB_TESTSOURCE_H

#include <ceb/plugin.h>

extern const ceb_plugin ceb_testsource_plugin;

typedef struct testsource testsource;

/* Submits and, when submit returned CEB_OK, waits for the callback and
 * copies the result into *res. Returns submit's status. opts may be NULL. */
int testsource_submit(testsource *s, ceb_event *const *events, size_t n,
                      ceb_submit_opts *opts, ceb_submit_result *res);
/* submit_mapped (ABI 1.2) of the JSON text doc, waiting as above; err
 * gets the host's reason. CEB_EUNSUPPORTED from a host without it. */
int testsource_submit_mapped(testsource *s, const char *doc,
                             ceb_submit_opts *opts, ceb_submit_result *res,
                             char *err, size_t errlen);
/* The host table and instance (for direct host calls in tests). */
const ceb_host *testsource_host(testsource *s);
ceb_instance *testsource_instance(testsource *s);

#endif
