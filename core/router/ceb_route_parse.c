#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "config/ceb_core_spec.h"
#include "router/ceb_route.h"

void ceb_route_free(ceb_route *r) {
  if (!r) return;
  free(r->name);
  for (size_t i = 0; i < r->nfrom; i++)
    free(r->from[i]);
  free(r->from);
  free(r->to);
  for (size_t i = 0; i < r->nmatch; i++) {
    free(r->match[i].attr);
    for (size_t a = 0; a < r->match[i].nalts; a++)
      free(r->match[i].alts[a]);
    free(r->match[i].alts);
  }
  free(r->match);
  free(r->order_by);
  free(r->dlq_sink);
  free(r->dlq_topic);
  free(r->receipts_sink);
  free(r->receipts_topic);
  free(r->receipts_prefix);
  free(r->contract);
  ceb_retry_policy_clear(&r->retry);
  free(r);
}

int ceb_route_split_dest(const char *dest, char **sink, char **topic) {
  *sink = *topic = NULL;
  if (!dest || !*dest || *dest == ':') return CEB_EINVAL;
  const char *colon = strchr(dest, ':');
  *sink = colon ? strndup(dest, (size_t)(colon - dest)) : strdup(dest);
  if (colon && colon[1])
    *topic = strdup(colon + 1);
  else if (colon) {
    free(*sink);
    *sink = NULL;
    return CEB_EINVAL; /* "sink:" names no topic */
  }
  return *sink ? CEB_OK : CEB_ENOMEM;
}

typedef struct match_acc {
  ceb_route *r;
  int rc;
  char *err;
  size_t errlen;
} match_acc;

static int add_match(const char *key, const char *value, void *arg) {
  match_acc *m = arg;
  ceb_route *r = m->r;
  const char *attr = key + strlen("match.");
  if (!*attr || !value || !*value) {
    snprintf(m->err, m->errlen, "route %s: %s needs an attribute and a value",
             r->name, key);
    return m->rc = CEB_ECONFIG;
  }
  ceb_route_match *nm = realloc(r->match, (r->nmatch + 1) * sizeof *nm);
  if (!nm) return m->rc = CEB_ENOMEM;
  r->match = nm;
  ceb_route_match *mt = &r->match[r->nmatch++];
  *mt = (ceb_route_match){.attr = strdup(attr)};
  const char *p = value;
  for (;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == 0) {
      snprintf(m->err, m->errlen, "route %s: %s has an empty alternative",
               r->name, key);
      return m->rc = CEB_ECONFIG;
    }
    char **na = realloc(mt->alts, (mt->nalts + 1) * sizeof *na);
    if (!na) return m->rc = CEB_ENOMEM;
    mt->alts = na;
    mt->alts[mt->nalts++] = strndup(p, len);
    if (!bar) break;
    p = bar + 1;
  }
  return 0;
}

int ceb_route_parse(const char *name, const ceb_route_cfg *rc, ceb_route **out,
                    char *err, size_t errlen) {
  *out = NULL;
  ceb_route *r = calloc(1, sizeof *r);
  if (!r) return CEB_ENOMEM;
  r->name = strdup(name ? name : "");
  const char *const *items = rc->from.items;
  size_t n = rc->from.count;
  if (n == 0) {
    snprintf(err, errlen, "route %s: 'from' names no source", r->name);
    ceb_route_free(r);
    return CEB_ECONFIG;
  }
  r->from = calloc(n, sizeof *r->from);
  for (size_t i = 0; r->from && i < n; i++)
    r->from[r->nfrom++] = strdup(items[i]);
  const char *to = rc->to;
  if (!to || !*to) {
    snprintf(err, errlen, "route %s: 'to' names no sink", r->name);
    ceb_route_free(r);
    return CEB_ECONFIG;
  }
  r->to = strdup(to);
  match_acc m = {r, CEB_OK, err, errlen};
  ceb_config_foreach(rc->cfg, "match.", add_match, &m);
  if (m.rc != CEB_OK) {
    ceb_route_free(r);
    return m.rc;
  }
  const char *ob = rc->order_by;
  if (ob && *ob) r->order_by = strdup(ob);
  const char *dlq = rc->dlq;
  if (dlq && *dlq && strcmp(dlq, "store") != 0 &&
      (ceb_route_split_dest(dlq, &r->dlq_sink, &r->dlq_topic) != CEB_OK ||
       !r->dlq_topic)) {
    snprintf(err, errlen, "route %s: dlq '%s' is not 'store' or SINK:topic",
             r->name, dlq);
    ceb_route_free(r);
    return CEB_ECONFIG;
  }
  const char *rcp = rc->receipts;
  if (rcp && *rcp &&
      ceb_route_split_dest(rcp, &r->receipts_sink, &r->receipts_topic) !=
          CEB_OK) {
    snprintf(err, errlen, "route %s: receipts '%s' is not SINK[:topic]",
             r->name, rcp);
    ceb_route_free(r);
    return CEB_ECONFIG;
  }
  const char *pfx = rc->receipts_type_prefix;
  r->receipts_prefix = strdup(pfx ? pfx : "nl.cebridge.delivery");
  const char *ct = rc->contract;
  if (ct && *ct) r->contract = strdup(ct);
  const char *cm = rc->contract_mode;
  r->contract_warn = cm && strcmp(cm, "warn") == 0;
  const char *mode = rc->retry_mode;
  r->retry.exponential = mode && strcmp(mode, "exponential") == 0;
  items = rc->retry_schedule.items;
  n = rc->retry_schedule.count;
  const char *dflt[16];
  size_t nd = 0;
  char buf[] = CEB_DEFAULT_RETRY_SCHEDULE;
  if (n == 0) { /* the accessor gave no default: use the profile's */
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && nd < 16;
         t = strtok_r(NULL, " ", &save))
      dflt[nd++] = t;
    items = dflt;
    n = nd;
  }
  if (ceb_retry_parse_schedule(&r->retry, items, n, err, errlen) != CEB_OK) {
    ceb_route_free(r);
    return CEB_ECONFIG;
  }
  r->retry.base_ms = rc->retry_base_ms;
  r->retry.max_delay_ms = rc->retry_max_delay_ms;
  r->retry.max_attempts = (uint32_t)rc->retry_max_attempts;
  r->retry.deadline_ms = rc->deadline_ms;
  r->timeout_ms = rc->timeout_ms;
  r->max_inflight = (uint32_t)rc->max_inflight;
  r->max_open_per_key = rc->max_open_per_key;
  r->callbacks = rc->callbacks;
  if (r->max_inflight == 0) r->max_inflight = 1;
  if (!r->from || !r->name || !r->to || !r->receipts_prefix) {
    ceb_route_free(r);
    return CEB_ENOMEM;
  }
  *out = r;
  return CEB_OK;
}
