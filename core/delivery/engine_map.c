/* Egress mappings (a route's or its sink's `map`): one batch to the
 * mapping workers per claim, the event's journaled JSON in, the output
 * object read into the ceb_mapped_out the sink gets (core/mapping's
 * ceb_egress_read; include/ceb/plugin.h gives the shape). A leaf of the
 * engine: it fills contexts and says which failed; engine_core.c settles
 * those. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delivery/engine_internal.h"
#include "mapping/ceb_mapping_egress.h"

#include <ceb/status.h>

void cebe_mapped_free(ceb_egress_out *m) {
  ceb_egress_free(m);
}

size_t cebe_map_claimed(ceb_mapper *mapper, int program, dctx **cs, size_t n,
                        char (*why)[CEBE_MAP_WHY], int *retry) {
  ceb_map_req *reqs = calloc(n ? n : 1, sizeof *reqs);
  size_t failed = 0;
  if (!reqs) {
    for (size_t i = 0; i < n; i++) {
      snprintf(why[i], CEBE_MAP_WHY, "mapping: out of memory");
      retry[i] = 1;
    }
    return n;
  }
  for (size_t i = 0; i < n; i++)
    reqs[i] = (ceb_map_req){.program = (uint32_t)program,
                            .input = cs[i]->json,
                            .input_len = cs[i]->d.encoded_len};
  ceb_mapper_run(mapper, reqs, n);
  for (size_t i = 0; i < n; i++) {
    why[i][0] = '\0';
    retry[i] = 0;
    ceb_map_req *r = &reqs[i];
    if (r->status != CEB_OK) {
      snprintf(why[i], CEBE_MAP_WHY, "%s", r->reason);
      retry[i] = r->status == CEB_EIO;
    } else if (r->nout != 1) {
      snprintf(why[i], CEBE_MAP_WHY,
               "the program output %zu values; an egress mapping outputs "
               "exactly one",
               r->nout);
    } else {
      char w[CEBE_MAP_WHY];
      ceb_egress_out *m = ceb_egress_read(ceb_map_output(r, NULL), w, sizeof w);
      cs[i]->mapped = m;
      if (m)
        cs[i]->d.mapped = ceb_egress_mapped(m);
      else
        snprintf(why[i], CEBE_MAP_WHY, "%s", w);
    }
    if (why[i][0]) failed++;
    ceb_map_req_clear(r);
  }
  free(reqs);
  return failed;
}

size_t cebe_callback_claimed(ceb_engine *e, dctx **cs, size_t n,
                             char (*why)[CEBE_MAP_WHY], int *retry) {
  size_t failed = 0;
  for (size_t i = 0; i < n; i++) {
    why[i][0] = '\0';
    retry[i] = 0;
    char *doc = NULL;
    if (!e->callback_doc)
      snprintf(why[i], CEBE_MAP_WHY, "this bridge makes no callbacks");
    else
      doc = e->callback_doc(e->callback_arg, cs[i]->seq,
                            ceb_event_get(cs[i]->ev, "id"), &retry[i], why[i],
                            CEBE_MAP_WHY);
    if (doc) {
      /* the same reader as a program's output: one shape for the sinks */
      ceb_egress_out *m = ceb_egress_read(doc, why[i], CEBE_MAP_WHY);
      cs[i]->mapped = m;
      if (m) cs[i]->d.mapped = ceb_egress_mapped(m);
      free(doc);
    } else if (!why[i][0]) {
      snprintf(why[i], CEBE_MAP_WHY, "no callback document");
    }
    if (!cs[i]->mapped) failed++;
  }
  return failed;
}
