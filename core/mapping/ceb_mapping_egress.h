/* An egress mapping's output (a JSON object) read into the ceb_mapped_out
 * a sink gets (ABI 1.2; include/ceb/plugin.h gives the shape): body (a
 * string's bytes, or any other value's compact JSON), content_type,
 * headers (token names, string values without control characters), key,
 * topic; any other member is refused. Used by the engine and by
 * `cebridge event map --sink`. Pure; any thread. */
#ifndef CEB_MAPPING_EGRESS_H
#define CEB_MAPPING_EGRESS_H

#include <stddef.h>

#include <ceb/plugin.h>

typedef struct ceb_egress_out ceb_egress_out;

/* Reads one output (a JSON text). NULL with why (cap bytes) filled when it
 * is not the shape. Free with ceb_egress_free. */
ceb_egress_out *ceb_egress_read(const char *text, char *why, size_t cap);
/* The result as the sink sees it; borrowed from m. */
const ceb_mapped_out *ceb_egress_mapped(const ceb_egress_out *m);
void ceb_egress_free(ceb_egress_out *m);

#endif
