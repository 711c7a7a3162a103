/* HELP texts of the metric families cebridge and its plugins record, for
 * families nobody declared (plugins record through the host's metric()
 * call, which carries no description). Prometheus convention: every family
 * has HELP; a family missing here is rendered with a generic one, and the
 * exposition test (tests/integration/metrics) names it. */
#ifndef CEB_METRICS_HELP_H
#define CEB_METRICS_HELP_H

/* The HELP text for a full family name ("cebridge_http_requests_total"),
 * or NULL when unknown. Static storage; thread-safe. */
const char *ceb_metrics_known_help(const char *name);

/* The text rendered for a family neither declared nor known. */
#define CEB_METRICS_HELP_UNKNOWN "no description registered"

#endif
