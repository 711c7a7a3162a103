/* What every engine shares of the store's types: state names, the DLQ
 * row's members and the claim's memory. */
#include <stdlib.h>
#include <string.h>

#include "store/ceb_store.h"

const char *ceb_dstate_name(int state) {
  switch (state) {
  case CEB_DS_PENDING:
    return "pending";
  case CEB_DS_INFLIGHT:
    return "in-progress";
  case CEB_DS_RETRYING:
    return "retrying";
  case CEB_DS_DONE:
    return "done";
  case CEB_DS_DEAD:
    return "dead";
  }
  return "unknown";
}

const char *const ceb_dlq_row_names[CEB_DLQ_ROW_MEMBERS] = {"id",
                                                            "seq",
                                                            "route",
                                                            "sink",
                                                            "reason",
                                                            "last_reason",
                                                            "status",
                                                            "attempts",
                                                            "first_attempt_at",
                                                            "last_attempt_at",
                                                            "created_at",
                                                            "error",
                                                            "event_id",
                                                            "source",
                                                            "type",
                                                            "replayed_at",
                                                            "replays",
                                                            "forwarded_at"};

void ceb_claim_free(ceb_claim *c) {
  if (!c) return;
  free(c->event_json);
  free(c->order_key);
  memset(c, 0, sizeof *c);
}

void ceb_claims_free(ceb_claim *c, size_t count) {
  for (size_t i = 0; c && i < count; i++)
    ceb_claim_free(&c[i]);
  free(c);
}
