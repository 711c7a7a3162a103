/* The SQLite engine's table (ceb_store_engine.h): the ops are the cebs_*
 * functions of this folder; the few that only adapt a call live here. */
#include <ceb/status.h>

#include "store/sqlite/store_internal.h"

int cebs_settle(cebs_store *st, ceb_attempt_result *r, ceb_store_done_fn done,
                void *arg) {
  /* not synced: a lost outcome only repeats the attempt; it reads r's
   * inputs only (CEBS_OP_REDO) */
  return cebs_submit_op(st, cebs_attempt_run, r, done, arg,
                        CEBS_NOSYNC | CEBS_OP_REDO);
}

cebs_store *cebs_of(ceb_store *st) {
  return st && st->eng == &ceb_store_sqlite_engine ? st->impl : NULL;
}

const ceb_store_engine ceb_store_sqlite_engine = {
    .struct_size = sizeof(ceb_store_engine),
    .version = CEB_STORE_ENGINE_VERSION,
    .name = "sqlite",
    .open = cebs_open,
    .close = cebs_close,
    .writable = cebs_writable,
    .stats = cebs_stats,
    .set_ingest_listener = cebs_set_ingest_listener,
    .set_claim_hook = cebs_set_claim_hook,
    .ingest = cebs_ingest,
    .claim = cebs_claim,
    .next_due = cebs_next_due,
    .settle = cebs_settle,
    .recover = cebs_recover,
    .count_open = cebs_count_open,
    .oldest_open = cebs_oldest_open,
    .event_status = cebs_event_status,
    .dlq_list = cebs_dlq_list,
    .dlq_show = cebs_dlq_show,
    .dlq_replay = cebs_dlq_replay,
    .dlq_purge = cebs_dlq_purge,
    .dlq_forwarded = cebs_dlq_forwarded,
    .dlq_unforwarded = cebs_dlq_unforwarded,
    .dlq_forward_event = cebs_dlq_forward_event,
    .idem_begin = cebs_idem_begin,
    .idem_finish = cebs_idem_finish,
    .idem_abort = cebs_idem_abort,
    .idem_reset_inflight = cebs_idem_reset_inflight,
    .contract_put = cebs_contract_put,
    .contract_list = cebs_contract_list,
    .contract_get = cebs_contract_get,
    .sweep = cebs_sweep,
    .pull_append = cebs_pull_append,
    .pull_fetch = cebs_pull_fetch,
    .pull_commit = cebs_pull_commit,
    .pull_stats = cebs_pull_stats,
    .shared = cebs_shared,
    .try_lead = cebs_try_lead,
    .dlq_of_seq = cebs_dlq_of_seq,
    .heartbeat = cebs_heartbeat,
    .leave = cebs_leave,
    .cluster = cebs_cluster,
    .attempts_of = cebs_attempts_of,
    .sink_state_get = cebs_sink_state_get,
    .sink_state_put = cebs_sink_state_put,
    .sink_states = cebs_sink_states,
    .replay_range = cebs_replay_range,
    .count_open_key = cebs_count_open_key,
    .key_stats = cebs_key_stats,
    .callback_url = cebs_callback_url,
};
