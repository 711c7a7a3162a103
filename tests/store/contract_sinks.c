/* The store contract's sink life cycle (ceb_store_sink_state_*): one row
 * per sink, replaced on put, read back the same by every handle on the
 * store (another bridge's enable is seen), listed by name, and kept across
 * a reopen (a restart keeps a disabled sink disabled). */
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

void sc_sinks(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "sinks");
  if (!st) return;
  ceb_sink_state got;
  CHECK_INT(ceb_store_sink_state_get(st, "partner", &got), CEB_ENOTFOUND);
  json_t *l = ceb_store_sink_states(st);
  CHECK(l && json_array_size(l) == 0);
  json_decref(l);
  /* failing first, then disabled by a 410 */
  ceb_sink_state failing = {.failing_since = 1000};
  CHECK_INT(ceb_store_sink_state_put(st, "partner", &failing), CEB_OK);
  ceb_sink_state off = {
      .disabled = 1, .disabled_at = 5000, .failing_since = 1000};
  strcpy(off.reason, "the endpoint is gone (http.410)");
  CHECK_INT(ceb_store_sink_state_put(st, "partner", &off), CEB_OK);
  CHECK_INT(ceb_store_sink_state_put(st, "archive", &failing), CEB_OK);
  CHECK_INT(ceb_store_sink_state_get(st, "partner", &got), CEB_OK);
  CHECK(got.disabled == 1 && got.disabled_at == 5000 &&
        got.failing_since == 1000 &&
        strcmp(got.reason, "the endpoint is gone (http.410)") == 0);
  CHECK_INT(ceb_store_sink_state_put(st, "", &off), CEB_EINVAL);
  /* listed by name */
  l = ceb_store_sink_states(st);
  CHECK_INT(json_array_size(l), 2);
  CHECK_STR(json_string_value(json_object_get(json_array_get(l, 0), "sink")),
            "archive");
  CHECK(json_is_true(json_object_get(json_array_get(l, 1), "disabled")));
  CHECK_INT(
      json_integer_value(json_object_get(json_array_get(l, 1), "disabled_at")),
      5000);
  json_decref(l);
  /* another bridge (or the CLI) enables it: every handle reads that */
  ceb_store *b = env->open(env->ctx, "b");
  CHECK(b != NULL);
  if (b) {
    CHECK_INT(ceb_store_sink_state_get(b, "partner", &got), CEB_OK);
    CHECK_INT(got.disabled, 1);
    ceb_sink_state on = {0};
    CHECK_INT(ceb_store_sink_state_put(b, "partner", &on), CEB_OK);
    ceb_store_close(b);
  }
  CHECK_INT(ceb_store_sink_state_get(st, "partner", &got), CEB_OK);
  CHECK(got.disabled == 0 && got.failing_since == 0 && got.reason[0] == 0);
  ceb_store_close(st);
  /* a restart reads what was stored */
  st = env->open(env->ctx, "a");
  CHECK(st != NULL);
  if (!st) return;
  CHECK_INT(ceb_store_sink_state_get(st, "archive", &got), CEB_OK);
  CHECK_INT(got.failing_since, 1000);
  ceb_store_close(st);
}
