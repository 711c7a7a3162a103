/* Routes ([route NAME] sections): which events go where, and how.
 *
 * Matching: a route takes an event when the submitting source is in
 * `from` and every match.<attr> filter holds. A filter value is one or more
 * alternatives separated by '|'; each is exact, a prefix ("nl.edu.*"), a
 * suffix ("*.created") or "*" (attribute present). attr may be any context
 * attribute or extension; an unset attribute never matches.
 *
 * A parsed route is immutable and may be read from any thread. */
#ifndef CEB_ROUTE_H
#define CEB_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include <ceb/config.h>
#include <ceb/event.h>

#include "config/ceb_host_cfg.h"
#include "delivery/ceb_retry.h"

typedef struct ceb_route_match {
  char *attr;
  char **alts; /* patterns */
  size_t nalts;
} ceb_route_match;

typedef struct ceb_route {
  char *name;
  char **from;
  size_t nfrom;
  char *to; /* sink section name */
  ceb_route_match *match;
  size_t nmatch;
  char *order_by; /* NULL: unordered */
  char *dlq_sink; /* NULL: the store DLQ only */
  char *dlq_topic;
  char *receipts_sink; /* NULL: no receipts */
  char *receipts_topic;
  char *receipts_prefix;
  char *contract;         /* pin, checked by the contract hook */
  int contract_warn;      /* contract.mode = warn */
  ceb_retry_policy retry; /* includes the deadline */
  int64_t timeout_ms;
  uint32_t max_inflight;
  int64_t max_open_per_key; /* open deliveries per order key; 0: no limit */
  int callbacks; /* callbacks = true: sends its sources' clients' callbacks
                    and takes no event by matching */
} ceb_route;

/* Builds a route from its checked, bound config (ceb_conf_section's
 * host.route). CEB_OK, or < 0 with a one-line reason in err. *out is owned
 * by the caller (ceb_route_free). */
int ceb_route_parse(const char *name, const ceb_route_cfg *rc, ceb_route **out,
                    char *err, size_t errlen);
void ceb_route_free(ceb_route *r);

/* Splits "SINK[:topic]" into malloc'd parts (*topic NULL when absent). */
int ceb_route_split_dest(const char *dest, char **sink, char **topic);

/* 1 when pattern (with '|' alternatives) matches value. */
int ceb_pattern_match(const char *pattern, const char *value);

/* 1 when the route takes ev submitted by source instance `source`. */
int ceb_route_matches(const ceb_route *r, const char *source,
                      const ceb_event *ev);

/* The ordering key of ev on r (borrowed from ev), NULL when unordered or
 * the attribute is unset (then the event is not ordered). */
const char *ceb_route_order_key(const ceb_route *r, const ceb_event *ev);

#endif
