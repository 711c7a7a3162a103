/* The clients of the HA tests: threads that each POST their own events
 * (id "ha-<client>-<n>", subject "k-<client>-<n mod keys>", structured
 * mode) one after the other to the bridges' intermediaries, round robin,
 * and retry an event that did not get its 202 (refused, 503, connection
 * refused or reset, timeout) on the next bridge, as a client behind a load
 * balancer does, until it gets one. A client moves to n + 1 only after n
 * got its 202, so each key's order is defined (ha_receiver checks it).
 * The bridges' ports live in an array the test updates (0 while a bridge
 * is down). Threads: one per client; every getter may be called from any
 * thread. curl_global_init must have run before ha_load_start. */
#ifndef CEB_HA_LOAD_H
#define CEB_HA_LOAD_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct ha_load ha_load;

typedef struct ha_load_opts {
  int clients;
  int per_client; /* events per client at most */
  int keys;       /* ordering keys per client */
  int nports;
  _Atomic int *ports;  /* the bridges' intermediary ports, 0: down */
  int idempotency_key; /* send Idempotency-Key: <id> */
  int rate;            /* events a second per client at most, 0: no limit */
} ha_load_opts;

typedef struct ha_load_stats {
  long accepted; /* 202 */
  long refused;  /* 503 (with Retry-After: retry_after) */
  long retry_after;
  long conflict;  /* 409 */
  long other;     /* any other status */
  long transport; /* connection refused, reset, timed out */
  long retries;   /* attempts beyond the first of an event */
  char first_other[128];
} ha_load_stats;

ha_load *ha_load_start(const ha_load_opts *o);
/* 1 once every client is through its events. */
int ha_load_finished(ha_load *l);
/* Events that got their 202. */
long ha_load_accepted(ha_load *l);
/* 1 when event (client, n) got its 202. */
int ha_load_is_accepted(ha_load *l, int client, int n);
void ha_load_stats_get(ha_load *l, ha_load_stats *out);
/* Asks the clients to stop (an event without its 202 is given up), joins
 * them; the counters stay readable until ha_load_free. */
void ha_load_stop(ha_load *l);
void ha_load_free(ha_load *l);

#endif
