/* Shared by the contract's files (tests/store/): the parts of the suite
 * and small helpers over the public store interface. */
#ifndef CEB_STORE_CONTRACT_INTERNAL_H
#define CEB_STORE_CONTRACT_INTERNAL_H

#include <stdint.h>

#include "ceb_test.h"
#include "store_contract.h"

/* The store's shortest lease the runners open with. */
#define SC_LEASE_MS 60000

/* The parts: each makes its own fresh stores. */
void sc_ingest(const ceb_store_contract_env *env);
void sc_fifo(const ceb_store_contract_env *env);
void sc_claims(const ceb_store_contract_env *env);
void sc_leases(const ceb_store_contract_env *env);
void sc_settle(const ceb_store_contract_env *env);
void sc_recover(const ceb_store_contract_env *env);
void sc_status(const ceb_store_contract_env *env);
void sc_dlq(const ceb_store_contract_env *env);
void sc_dlq_replay_key(const ceb_store_contract_env *env);
void sc_idem(const ceb_store_contract_env *env);
void sc_idem_race(const ceb_store_contract_env *env);
void sc_contracts(const ceb_store_contract_env *env);
void sc_sweep(const ceb_store_contract_env *env);
void sc_sinks(const ceb_store_contract_env *env);
void sc_pull(const ceb_store_contract_env *env);
void sc_lead(const ceb_store_contract_env *env);
void sc_cluster(const ceb_store_contract_env *env);
void sc_replay(const ceb_store_contract_env *env);
void sc_open_key(const ceb_store_contract_env *env);
void sc_key_status(const ceb_store_contract_env *env);
void sc_callback(const ceb_store_contract_env *env);
void sc_bounded(const ceb_store_contract_env *env);
void sc_claim_ingest(const ceb_store_contract_env *env);

/* A fresh store and a handle on it as instance "a"; NULL (and a failed
 * check) when the runner cannot make one. */
ceb_store *sc_fresh(const ceb_store_contract_env *env, const char *tag);

/* Journals one event (client, "urn:sc", id) for route (NULL: unrouted)
 * with order key key (NULL: unordered), first attempt due at now. Returns
 * its seq, 0 for a duplicate, -1 (and a failed check) on error. */
int64_t sc_ingest1(ceb_store *st, const char *client, const char *id,
                   const char *route, const char *key, int64_t now);

/* Claims up to max of route at now (the store's shortest lease); the
 * claims go to out (up to cap, the rest freed), the count is returned
 * (-1 on error). */
int sc_claim(ceb_store *st, const char *route, int64_t now, size_t max,
             ceb_claim *out, size_t cap);

/* Settles (seq, route) under fence as state at now (RETRYING: due at
 * next_at; DEAD: reason "rejected" with a DLQ row). Returns the status. */
int sc_settle1(ceb_store *st, const char *route, int64_t seq, int64_t fence,
               int state, int64_t now, int64_t next_at, int64_t *dlq_id);

/* The state name of (id, route) in the status of st (NULL: none). */
const char *sc_state(ceb_store *st, const char *id, const char *route,
                     char *buf, size_t size);

#endif
