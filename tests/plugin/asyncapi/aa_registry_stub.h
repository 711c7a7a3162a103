/* A local Apicurio v3 style registry for tests: libmicrohttpd on
 * 127.0.0.1:0 serving
 *   GET {prefix}/groups/{g}/artifacts/{a}/versions
 *   GET {prefix}/groups/{g}/artifacts/{a}/versions/{v}/content
 *   GET {prefix}/files/{name}            (plain documents, for url sources)
 * with ETags (If-None-Match -> 304). Documents can be set and changed while
 * it runs. Thread-safe. */
#ifndef AA_REGISTRY_STUB_H
#define AA_REGISTRY_STUB_H

#include <stddef.h>

typedef struct aa_stub aa_stub;

/* prefix e.g. "/apis/registry/v3". NULL on failure. */
aa_stub *aa_stub_start(const char *prefix);
void aa_stub_stop(aa_stub *s);
int aa_stub_port(const aa_stub *s);
/* Sets (adds or replaces) a version's content or a plain file. */
void aa_stub_set_version(aa_stub *s, const char *group, const char *artifact,
                         const char *version, const char *content);
void aa_stub_set_file(aa_stub *s, const char *name, const char *content);
/* Requests answered 200 / 304 so far. */
size_t aa_stub_count(aa_stub *s, int status);

#endif
