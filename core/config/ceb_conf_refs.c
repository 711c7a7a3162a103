/* Route checks that need the whole configuration: from/to/dlq/receipts
 * name existing sections, and the forms of match.<attr>, order_by,
 * retry.schedule and contract pins. */
#include "config/ceb_conf_internal.h"

#include <ctype.h>
#include <string.h>

int ceb_conf_attr_ok(const char *text) {
  size_t n = 0;
  for (const char *p = text; p && *p; p++, n++)
    if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p))) return 0;
  return n >= 1 && n <= 64;
}

/* A semver number: 0 or no leading zero, at most 9 digits. */
static const char *semver_num(const char *p) {
  const char *s = p;
  while (isdigit((unsigned char)*p))
    p++;
  if (p == s || p - s > 9 || (p - s > 1 && *s == '0')) return NULL;
  return p;
}

/* Up to max dot-separated numbers, at least min. NULL when malformed. */
static const char *semver_nums(const char *p, int min, int max) {
  int n = 0;
  while (n < max) {
    if (!(p = semver_num(p))) return NULL;
    n++;
    if (*p != '.' || n == max) break;
    p++;
  }
  return n >= min ? p : NULL;
}

int ceb_conf_contract_pin_ok(const char *text) {
  const char *at = strchr(text, '@');
  if (!at || at == text || strchr(at + 1, '@')) return 0;
  for (const char *p = text; p < at; p++) {
    unsigned char c = (unsigned char)*p;
    if (!(isalnum(c) || ((c == '_' || c == '.' || c == '-') && p > text)))
      return 0;
  }
  const char *v = at + 1, *end;
  if (*v == '^')
    end = semver_nums(v + 1, 1, 3);
  else if (*v == '~')
    end = semver_nums(v + 1, 2, 3);
  else if ((end = semver_nums(v, 3, 3)) && *end == '-') {
    /* pre-release: dot-separated [0-9A-Za-z-]+ identifiers */
    const char *p = end + 1;
    size_t id = 0;
    for (; *p; p++) {
      if (*p == '.') {
        if (id == 0) return 0;
        id = 0;
      } else if (isalnum((unsigned char)*p) || *p == '-') {
        id++;
      } else {
        return 0;
      }
    }
    return id > 0;
  }
  return end && *end == '\0';
}

/* First entry of key: its value, file and line; 0 when unset. */
static int entry_of(const ceb_config *cfg, const char *key, const char **value,
                    const char **file, int *line) {
  size_t n = cebi_config_count(cfg);
  for (size_t i = 0; i < n; i++) {
    const char *k;
    cebi_config_entry(cfg, i, &k, value, file, line);
    if (strcmp(k, key) == 0) return 1;
  }
  return 0;
}

/* Reports that name is not a [kind] section, with the closest one. */
static void missing_ref(const ceb_conf *conf, ceb_conf_errors *errs,
                        const char *file, int line, const char *route,
                        const char *key, const char *kind, const char *name,
                        size_t name_len) {
  char want[130];
  snprintf(want, sizeof want, "%.*s", (int)(name_len < 129 ? name_len : 129),
           name);
  ceb_conf_suggest sg;
  ceb_conf_suggest_init(&sg, want);
  for (size_t i = 0; i < conf->count; i++)
    if (strcmp(conf->sections[i].kind, kind) == 0)
      ceb_conf_suggest_add(&sg, conf->sections[i].name);
  char hint[200];
  if (sg.best)
    snprintf(hint, sizeof hint, "did you mean '%s'?", sg.best);
  else
    snprintf(hint, sizeof hint, "define a [%s %.64s] section", kind, want);
  ceb_conf_error_add(errs, file, line, hint,
                     "%s '%.64s' of [route %s] is not a [%s] section", key,
                     want, route, kind);
}

static int section_exists(const ceb_conf *conf, const char *kind,
                          const char *name, size_t len) {
  for (size_t i = 0; i < conf->count; i++) {
    const ceb_conf_section *s = &conf->sections[i];
    if (s->name && strcmp(s->kind, kind) == 0 && strlen(s->name) == len &&
        strncmp(s->name, name, len) == 0)
      return 1;
  }
  return 0;
}

/* dlq / receipts: [store |] SINK[:topic]. */
static void check_destination(const ceb_conf *conf, ceb_conf_errors *errs,
                              const ceb_conf_section *r, const char *key,
                              int store_ok, int topic_required) {
  const char *v, *file;
  int line;
  if (!entry_of(r->cfg, key, &v, &file, &line)) return;
  if (store_ok && strcmp(v, "store") == 0) return;
  const char *colon = strchr(v, ':');
  size_t sink_len = colon ? (size_t)(colon - v) : strlen(v);
  const char *form = store_ok ? "store or SINK:topic" : "SINK or SINK:topic";
  if (sink_len == 0 || (colon && !colon[1]) || (!colon && topic_required)) {
    ceb_conf_error_add(errs, file, line, form,
                       "invalid %s '%.64s' in [route %s]", key, v, r->name);
    return;
  }
  if (!section_exists(conf, "sink", v, sink_len))
    missing_ref(conf, errs, file, line, r->name, key, "sink", v, sink_len);
}

/* Per-key metrics are bounded (ceb_key_metrics.h: at most 100 keys of at
 * most 200 bytes) and need keys: without order_by there are none. */
static void check_metrics_keys(ceb_conf_errors *errs,
                               const ceb_conf_section *r) {
  const ceb_config *cfg = r->cfg;
  const char *v, *file, *ob;
  int line;
  const char *keys[] = {"metrics.keys", "metrics.keys_top"};
  for (size_t k = 0; k < 2; k++) {
    if (!entry_of(cfg, keys[k], &v, &file, &line)) continue;
    if (!entry_of(cfg, "order_by", &ob, &(const char *){0}, &(int){0}) ||
        !*ob) {
      ceb_conf_error_add(errs, file, line, "order_by = ATTRIBUTE",
                         "%s in [route %s] needs order_by: a route without "
                         "ordering keys has none to count",
                         keys[k], r->name);
      continue;
    }
    if (k == 1) continue;
    const char *const *items;
    size_t n = ceb_config_list(cfg, "metrics.keys", &items);
    if (n > 100)
      ceb_conf_error_add(errs, file, line, "at most 100 keys",
                         "metrics.keys in [route %s] names %zu keys", r->name,
                         n);
    for (size_t i = 0; i < n; i++)
      if (strlen(items[i]) > 200) {
        ceb_conf_error_add(errs, file, line, "keys of at most 200 bytes",
                           "a key of %zu bytes in metrics.keys of [route %s]",
                           strlen(items[i]), r->name);
        break;
      }
  }
}

/* callbacks = true: what the route sends is made by the host (the
 * clients' status documents, core/runtime/runtime_callback.c), so nothing
 * selects or shapes events on it; and its sink must send each to the
 * client's own URL (the http sink's callback_urls, read from its section
 * as a plugin would). */
static void check_callbacks(const ceb_conf *conf, ceb_conf_errors *errs,
                            const ceb_conf_section *r) {
  const char *v, *file;
  int line;
  if (!entry_of(r->cfg, "callbacks", &v, &file, &line) ||
      !ceb_config_bool(r->cfg, "callbacks", 0))
    return;
  static const char *const not_with[] = {"filter", "map", "order_by", NULL};
  for (int k = 0; not_with[k]; k++)
    if (ceb_config_str(r->cfg, not_with[k]))
      ceb_conf_error_add(
          errs, file, line, "its deliveries are the clients' callbacks",
          "[route %s]: callbacks = true takes no %s", r->name, not_with[k]);
  size_t n = cebi_config_count(r->cfg);
  for (size_t i = 0; i < n; i++) {
    const char *k, *kv, *kf;
    int kl;
    cebi_config_entry(r->cfg, i, &k, &kv, &kf, &kl);
    if (strncmp(k, "match.", 6) == 0) {
      ceb_conf_error_add(
          errs, file, line, "its deliveries are the clients' callbacks",
          "[route %s]: callbacks = true takes no %s", r->name, k);
      break;
    }
  }
  const char *to = ceb_config_str(r->cfg, "to");
  for (size_t i = 0; to && i < conf->count; i++) {
    const ceb_conf_section *s = &conf->sections[i];
    if (s->name && strcmp(s->kind, "sink") == 0 && strcmp(s->name, to) == 0 &&
        !ceb_config_bool(s->cfg, "callback_urls", 0))
      ceb_conf_error_add(errs, file, line,
                         "set callback_urls = true on an http sink",
                         "[route %s]: callbacks = true needs a sink that sends "
                         "to each client's URL; [sink %s] has no callback_urls",
                         r->name, to);
  }
}

static void check_route(const ceb_conf *conf, ceb_conf_errors *errs,
                        const ceb_conf_section *r) {
  const ceb_config *cfg = r->cfg;
  const char *v, *file;
  int line;
  if (entry_of(cfg, "from", &v, &file, &line)) {
    const char *const *items;
    size_t n = ceb_config_list(cfg, "from", &items);
    if (n == 0)
      ceb_conf_error_add(errs, file, line, "name one or more [source] sections",
                         "empty 'from' in [route %s]", r->name);
    for (size_t i = 0; i < n; i++)
      if (!section_exists(conf, "source", items[i], strlen(items[i])))
        missing_ref(conf, errs, file, line, r->name, "from", "source", items[i],
                    strlen(items[i]));
  }
  if (entry_of(cfg, "to", &v, &file, &line) && *v &&
      !section_exists(conf, "sink", v, strlen(v)))
    missing_ref(conf, errs, file, line, r->name, "to", "sink", v, strlen(v));
  check_destination(conf, errs, r, "dlq", 1, 1);
  check_destination(conf, errs, r, "receipts", 0, 0);
  check_callbacks(conf, errs, r);
  if (entry_of(cfg, "order_by", &v, &file, &line) && !ceb_conf_attr_ok(v))
    ceb_conf_error_add(errs, file, line,
                       "an attribute or extension name: a-z and 0-9",
                       "invalid order_by '%.64s' in [route %s]", v, r->name);
  check_metrics_keys(errs, r);
  if (entry_of(cfg, "contract", &v, &file, &line) &&
      !ceb_conf_contract_pin_ok(v))
    ceb_conf_error_add(errs, file, line,
                       "NAME@1.2.0, NAME@^1 (any 1.x) or NAME@~1.2 (any 1.2.x)",
                       "invalid contract pin '%.64s' in [route %s]", v,
                       r->name);
  if (entry_of(cfg, "retry.schedule", &v, &file, &line)) {
    const char *const *items;
    size_t n = ceb_config_list(cfg, "retry.schedule", &items);
    int64_t ms;
    if (n == 0)
      ceb_conf_error_add(errs, file, line, "e.g. 0s 5s 5m 30m 2h",
                         "empty retry.schedule in [route %s]", r->name);
    for (size_t i = 0; i < n; i++) {
      if (ceb_parse_duration_ms(items[i], &ms) != CEB_OK) {
        ceb_conf_error_add(errs, file, line, "e.g. 0s 5s 5m 30m 2h",
                           "invalid duration '%.64s' in retry.schedule of "
                           "[route %s]",
                           items[i], r->name);
        break;
      }
    }
  }
  size_t n = cebi_config_count(cfg);
  for (size_t i = 0; i < n; i++) {
    const char *key;
    cebi_config_entry(cfg, i, &key, &v, &file, &line);
    if (strncmp(key, "match.", 6) != 0 || !key[6]) continue;
    if (!ceb_conf_attr_ok(key + 6)) {
      ceb_conf_error_add(errs, file, line,
                         "attribute names are a-z and 0-9 only",
                         "invalid attribute '%.64s' in %.64s of [route %s]",
                         key + 6, key, r->name);
      continue;
    }
    /* alternatives separated by '|' must each be non-empty */
    size_t len = strlen(v);
    if (len == 0 || v[0] == '|' || v[len - 1] == '|' || strstr(v, "||"))
      ceb_conf_error_add(errs, file, line,
                         "exact, prefix (x*) or suffix (*x) patterns, "
                         "alternatives separated by '|'",
                         "empty pattern in %.64s of [route %s]", key, r->name);
  }
}

void ceb_conf_check_routes(const ceb_conf *conf, ceb_conf_errors *errs) {
  for (size_t i = 0; i < conf->count; i++)
    if (strcmp(conf->sections[i].kind, "route") == 0)
      check_route(conf, errs, &conf->sections[i]);
}
