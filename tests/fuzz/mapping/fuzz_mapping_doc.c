/* Fuzz target: a mapping input document (whatever bytes a transport could
 * hand submit_mapped) through the host's whole mapping path: one batch to
 * a mapping worker with an ingress program (CEB_MAP_EXPAND), a route
 * filter (CEB_MAP_TRUTH) and an egress program, then the host's readers of
 * what comes back: every output decoded with the SDK's JSON codec as the
 * runtime does, the egress output read as the engine does. Checks the
 * invariants the host relies on: each item answered, a failure with a
 * one-line reason, nout NUL-separated JSON texts. The pool (one worker)
 * lives across inputs, as in the bridge. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/codec.h>
#include <ceb/status.h>

#include "mapping/ceb_mapping.h"
#include "mapping/ceb_mapping_egress.h"

static const char *const k_programs[] = {
    /* ingress: a typical document-to-CloudEvent mapping, arrays kept */
    "if type == \"array\" then .[] else . end | "
    "{specversion: \"1.0\", id: (.key // .id // \"x\" | tostring), "
    "source: \"urn:nld:oin:00000001234567890000:systeem:fuzz\", "
    "type: (\"nl.fuzz.\" + (.topic // .type // \"t\" | tostring)), "
    "data: (.value // .body // .payload)}",
    /* route filter */
    ".type? // . | tostring | startswith(\"nl.\")",
    /* egress */
    "{body: (.data // .), headers: ((.headers? // {}) | with_entries("
    "select(.value | type == \"string\"))), key: (.key? | "
    "if type == \"string\" then . else null end)}",
};

static ceb_mapper *pool(void) {
  static ceb_mapper *m;
  if (!m) {
    ceb_mapper_opts o = {
        .workers = 1, .timeout_ms = 2000, .memory_max = 256u * 1024 * 1024};
    char err[256];
    m = ceb_mapper_new(&o, k_programs, 3, err, sizeof err);
    if (!m) { /* no worker: nothing to fuzz */
      fprintf(stderr, "fuzz_mapping_doc: %s\n", err);
      abort();
    }
  }
  return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ceb_mapper *m = pool();
  ceb_map_req r[3];
  for (uint32_t i = 0; i < 3; i++)
    r[i] = (ceb_map_req){.program = i,
                         .flags = i == 0   ? CEB_MAP_EXPAND
                                  : i == 1 ? CEB_MAP_TRUTH
                                           : 0,
                         .input = (const char *)data,
                         .input_len = size};
  if (ceb_mapper_run(m, r, 3) != CEB_OK) abort();
  for (int i = 0; i < 3; i++) {
    if (r[i].status != CEB_OK) {
      /* a reason, one line */
      if (r[i].status != CEB_EMAPPING || !r[i].reason[0] ||
          strchr(r[i].reason, '\n'))
        abort();
      continue;
    }
    size_t n = 0;
    for (const char *o = ceb_map_output(&r[i], NULL); o;
         o = ceb_map_output(&r[i], o)) {
      n++;
      if (i == 0) {
        ceb_event *ev = NULL;
        ceb_error e;
        if (ceb_json_decode(o, strlen(o), &ev, &e) == CEB_OK)
          ceb_event_unref(ev);
      } else if (i == 1) {
        if (strcmp(o, "true") != 0 && strcmp(o, "false") != 0) abort();
      } else {
        char why[512];
        ceb_egress_free(ceb_egress_read(o, why, sizeof why));
      }
    }
    if (n != r[i].nout) abort();
    ceb_map_req_clear(&r[i]);
  }
  return 0;
}
