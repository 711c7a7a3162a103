/* A runtime assembled by hand for core integration tests: a config dir
 * written from text, the in-tree test plugins linked in (no loader), an
 * injected clock the test moves, and helpers to make events and wait. */
#ifndef CEB_CORE_HARNESS_H
#define CEB_CORE_HARNESS_H

#include <stdatomic.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "config/ceb_conf.h"
#include "instance/ceb_instance.h"
#include "metrics/ceb_metrics.h"
#include "runtime/ceb_runtime.h"
#include "testsink.h"
#include "testsource.h"

#define HARNESS_MAX_INST 8
#define HARNESS_T0 1700000000000LL

typedef struct harness {
  char *dir;
  ceb_conf *conf;
  ceb_metrics *metrics;
  ceb_runtime *rt;
  ceb_instance *inst[HARNESS_MAX_INST];
  size_t ninst;
  _Atomic int64_t clock;
} harness;

/* Writes conf_text (sections after [bridge], which the harness writes with
 * the store path plus bridge_extra lines) and starts everything.
 * Returns 0 on success (failures are CHECKed). */
int harness_open(harness *h, const char *tag, const char *bridge_extra,
                 const char *conf_text);
/* The same on the store spec given (a postgresql:// URI: a bridge sharing
 * that database with others); NULL: harness_open's SQLite file. */
int harness_open_store(harness *h, const char *tag, const char *store,
                       const char *bridge_extra, const char *conf_text);
/* Reopens on the same directory (store kept): a restart. */
int harness_restart(harness *h);
/* Drains and frees (keeps nothing). */
void harness_close(harness *h);

testsink *harness_sink(harness *h, const char *name);
testsource *harness_source(harness *h, const char *name);
/* Moves the clock and wakes the engine. */
void harness_advance(harness *h, int64_t ms);
int64_t harness_now(harness *h);

/* A valid event; key may be NULL (no partitionkey). */
ceb_event *harness_event(const char *id, const char *type, const char *key);
/* Submits one event through source src and waits until durable; returns
 * submit's status. */
int harness_submit(harness *h, const char *src, ceb_event *ev);

/* Waits (real time, bounded) until sink has seen at least n deliveries. */
int harness_wait_count(testsink *s, size_t n);
/* Waits until sink has seen event id at least n times. */
int harness_wait_id(testsink *s, const char *id, size_t n);
/* State of event id on route ("done", "dead", ...) or "" when absent. */
const char *harness_state(harness *h, const char *id, const char *route,
                          char *buf, size_t n);
/* An integer field of event id's delivery on route (its status JSON:
 * "attempts", "next_attempt_at", ...), or -1 when absent. */
long long harness_route_int(harness *h, const char *id, const char *route,
                            const char *field);
/* Waits until harness_route_int(h, id, route, field) == value. */
int harness_wait_route_int(harness *h, const char *id, const char *route,
                           const char *field, long long value);
/* Waits until event id on route reaches state. */
int harness_wait_state(harness *h, const char *id, const char *route,
                       const char *state);
/* The engine's count of open deliveries on route (the "queued" figure its
 * backpressure uses), or -1 when there is no such route. It drops in the
 * outcome's done callback, just after the store committed the final state,
 * so a reader can see "done" in the store while the count still has it. */
long long harness_queued(harness *h, const char *route);
/* Waits until harness_queued(h, route) == n. */
int harness_wait_queued(harness *h, const char *route, long long n);
/* The value of the first metrics line holding needle (a series as
 * rendered, e.g. "cebridge_mapping_errors_total{source=\"raw\"}"), or -1
 * when no line holds it. */
long long harness_metric(harness *h, const char *needle);

#endif
