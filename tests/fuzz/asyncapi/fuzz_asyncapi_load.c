/* Fuzz target: AsyncAPI text (YAML or JSON) through the plugin's parser and
 * bundler (no I/O: external refs are refused) and the core's contract
 * loader with payload schemas compiled. Must never crash, leak or hang. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aa_doc.h"
#include "contracts/ceb_contract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *no_fetch(void *arg, const char *uri, size_t *len, char *err,
                      size_t errlen) {
  (void)arg;
  (void)uri;
  (void)len;
  strncpy(err, "no I/O while fuzzing", errlen - 1);
  err[errlen - 1] = '\0';
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256 * 1024) return 0;
  char err[512];
  json_t *doc = aa_parse((const char *)data, size, err, sizeof err);
  if (!doc) return 0;
  if (aa_bundle(doc, "/fuzz/asyncapi.yaml", no_fetch, NULL, 4, NULL, err,
                sizeof err) == 0) {
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    if (text) {
      ceb_contract *c = NULL;
      ceb_contract_opts o = {.compile = 1};
      if (ceb_contract_load("fuzz", text, strlen(text), &o, &c, err,
                            sizeof err) == 0)
        ceb_contract_free(c);
      free(text);
    }
  }
  json_decref(doc);
  return 0;
}
