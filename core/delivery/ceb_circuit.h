/* Circuit breaker of one sink: closed until `failures` consecutive failed
 * attempts, then open for open_for_ms; then half-open: one probe attempt;
 * its success closes the circuit, its failure opens it again. Not
 * thread-safe: the engine calls it under its lock. */
#ifndef CEB_CIRCUIT_H
#define CEB_CIRCUIT_H

#include <stdint.h>

typedef enum ceb_circuit_state {
  CEB_CIRCUIT_CLOSED = 0,
  CEB_CIRCUIT_OPEN = 1,
  CEB_CIRCUIT_HALF_OPEN = 2
} ceb_circuit_state;

typedef struct ceb_circuit {
  int state;
  uint32_t failures; /* consecutive */
  uint32_t threshold;
  int64_t open_for_ms;
  int64_t open_until;
  int probe_inflight;
} ceb_circuit;

void ceb_circuit_init(ceb_circuit *c, uint32_t threshold, int64_t open_for_ms);
/* How many attempts may start now (max when closed, 0 or 1 otherwise);
 * moves open -> half-open when its time came. */
int ceb_circuit_allow(ceb_circuit *c, int64_t now, int max);
/* Records that an attempt started (half-open: it is the probe). */
void ceb_circuit_started(ceb_circuit *c);
/* Records an attempt's result. */
void ceb_circuit_success(ceb_circuit *c);
/* The started attempt did not happen (the sink was busy): a half-open
 * circuit may probe again. */
void ceb_circuit_cancel(ceb_circuit *c);
void ceb_circuit_failure(ceb_circuit *c, int64_t now);
/* Opens now regardless of the count (the peer said it is gone). */
void ceb_circuit_trip(ceb_circuit *c, int64_t now);
const char *ceb_circuit_state_name(int state);

#endif
