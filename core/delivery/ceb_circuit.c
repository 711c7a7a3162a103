#include "delivery/ceb_circuit.h"

void ceb_circuit_init(ceb_circuit *c, uint32_t threshold, int64_t open_for_ms) {
  *c = (ceb_circuit){.threshold = threshold ? threshold : 5,
                     .open_for_ms = open_for_ms > 0 ? open_for_ms : 30000};
}

int ceb_circuit_allow(ceb_circuit *c, int64_t now, int max) {
  if (c->state == CEB_CIRCUIT_OPEN && now >= c->open_until) {
    c->state = CEB_CIRCUIT_HALF_OPEN;
    c->probe_inflight = 0;
  }
  switch (c->state) {
  case CEB_CIRCUIT_CLOSED:
    return max;
  case CEB_CIRCUIT_HALF_OPEN:
    return c->probe_inflight || max < 1 ? 0 : 1;
  default:
    return 0;
  }
}

void ceb_circuit_started(ceb_circuit *c) {
  if (c->state == CEB_CIRCUIT_HALF_OPEN) c->probe_inflight = 1;
}

void ceb_circuit_cancel(ceb_circuit *c) {
  if (c->state == CEB_CIRCUIT_HALF_OPEN) c->probe_inflight = 0;
}

void ceb_circuit_success(ceb_circuit *c) {
  c->state = CEB_CIRCUIT_CLOSED;
  c->failures = 0;
  c->probe_inflight = 0;
}

void ceb_circuit_trip(ceb_circuit *c, int64_t now) {
  c->state = CEB_CIRCUIT_OPEN;
  c->open_until = now + c->open_for_ms;
  c->probe_inflight = 0;
}

void ceb_circuit_failure(ceb_circuit *c, int64_t now) {
  c->failures++;
  if (c->state == CEB_CIRCUIT_HALF_OPEN ||
      (c->state == CEB_CIRCUIT_CLOSED && c->failures >= c->threshold))
    ceb_circuit_trip(c, now);
}

const char *ceb_circuit_state_name(int state) {
  return state == CEB_CIRCUIT_OPEN        ? "open"
         : state == CEB_CIRCUIT_HALF_OPEN ? "half-open"
                                          : "closed";
}
