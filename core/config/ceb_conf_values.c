/* Type and range check of one value against its spec entry, with messages
 * that quote the value unless the key is SECRET. */
#include "config/ceb_conf_internal.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *ceb_conf_type_name(int type) {
  static const char *const names[] = {"string",  "int",  "bool", "duration",
                                      "size",    "rate", "list", "enum",
                                      "address", "url",  "path"};
  return type >= 0 && type <= CEB_CFG_PATH ? names[type] : "unknown";
}

void ceb_conf_format_duration(int64_t ms, char *buf, size_t size) {
  static const struct {
    const char *unit;
    int64_t ms;
  } units[] = {
      {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
  if (size == 0) return;
  buf[0] = '\0';
  if (ms <= 0) {
    snprintf(buf, size, ms == 0 ? "0s" : "%" PRId64 "ms", ms);
    return;
  }
  size_t len = 0;
  for (size_t i = 0; i < sizeof units / sizeof units[0] && ms > 0; i++) {
    if (ms >= units[i].ms) {
      int n = snprintf(buf + len, size - len, "%" PRId64 "%s", ms / units[i].ms,
                       units[i].unit);
      if (n < 0 || (size_t)n >= size - len) return;
      len += (size_t)n;
      ms %= units[i].ms;
    }
  }
}

void ceb_conf_format_size(uint64_t bytes, char *buf, size_t size) {
  static const struct {
    const char *unit;
    uint64_t mult;
  } units[] = {{"TiB", (uint64_t)1 << 40},
               {"GiB", (uint64_t)1 << 30},
               {"MiB", (uint64_t)1 << 20},
               {"KiB", (uint64_t)1 << 10},
               {"TB", 1000000000000ULL},
               {"GB", 1000000000},
               {"MB", 1000000},
               {"kB", 1000}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (bytes >= units[i].mult && bytes % units[i].mult == 0) {
      snprintf(buf, size, "%" PRIu64 "%s", bytes / units[i].mult,
               units[i].unit);
      return;
    }
  }
  snprintf(buf, size, "%" PRIu64 "B", bytes);
}

static void format_bound(const ceb_config_spec *spec, int64_t v, char *buf,
                         size_t size) {
  switch (spec->type) {
  case CEB_CFG_DURATION:
    ceb_conf_format_duration(v, buf, size);
    break;
  case CEB_CFG_SIZE:
    ceb_conf_format_size(v < 0 ? 0 : (uint64_t)v, buf, size);
    break;
  case CEB_CFG_RATE:
    snprintf(buf, size, "%" PRId64 "/s", v);
    break;
  default:
    snprintf(buf, size, "%" PRId64, v);
  }
}

static int has_range(const ceb_config_spec *spec) {
  return spec->min != 0 || spec->max != 0;
}

/* Upper bound applies unless it is below the lower one (a min-only spec). */
static int has_max(const ceb_config_spec *spec) {
  return has_range(spec) && spec->max >= spec->min;
}

static const char *type_example(const ceb_config_spec *spec) {
  switch (spec->type) {
  case CEB_CFG_INT:
    return "a decimal integer such as 42";
  case CEB_CFG_BOOL:
    return "true/false, yes/no, on/off or 1/0";
  case CEB_CFG_DURATION:
    return "e.g. 250ms, 5s, 5m, 1h30m, 7d";
  case CEB_CFG_SIZE:
    return "e.g. 512, 64KiB, 1MiB, 10kB";
  case CEB_CFG_RATE:
    return "e.g. 200/s, 1000/min, 10/h";
  case CEB_CFG_ADDRESS:
    return "host:port or [v6addr]:port, port 0..65535";
  case CEB_CFG_URL:
    return "an absolute http:// or https:// URL";
  case CEB_CFG_PATH:
    return "a file-system path";
  default:
    return "";
  }
}

static int url_ok(const char *text) {
  /* libcurl reads "https:///x" as host "x"; an authority must follow. */
  const char *sep = strstr(text, "://");
  if (strlen(text) > 8192 || !sep || sep[3] == '/' || sep[3] == '\0') return 0;
  CURLU *u = curl_url();
  if (!u) return 0;
  int ok = 0;
  char *scheme = NULL, *host = NULL;
  if (curl_url_set(u, CURLUPART_URL, text, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
    ok =
        (strcasecmp(scheme, "http") == 0 || strcasecmp(scheme, "https") == 0) &&
        host[0] != '\0';
  }
  curl_free(scheme);
  curl_free(host);
  curl_url_cleanup(u);
  return ok;
}

static int enum_has(const char *choices, const char *value) {
  size_t vlen = strlen(value);
  for (const char *p = choices; p && *p;) {
    size_t n = strcspn(p, "|");
    if (n == vlen && strncmp(p, value, n) == 0) return 1;
    p += n;
    if (*p) p++;
  }
  return 0;
}

static void enum_hint(const ceb_config_spec *spec, const char *value,
                      int secret, char *hint, size_t hint_size) {
  char choices[200];
  snprintf(choices, sizeof choices, "%s", spec->choices ? spec->choices : "");
  ceb_conf_suggest sg;
  ceb_conf_suggest_init(&sg, value);
  for (char *save = NULL, *t = strtok_r(choices, "|", &save); t;
       t = strtok_r(NULL, "|", &save))
    ceb_conf_suggest_add(&sg, t);
  if (sg.best && !secret)
    snprintf(hint, hint_size, "did you mean '%s'?", sg.best);
  else
    snprintf(hint, hint_size, "one of %s", spec->choices ? spec->choices : "");
}

int ceb_conf_value_check(const ceb_config_spec *spec, const char *value,
                         const char *label, char *msg, size_t msg_size,
                         char *hint, size_t hint_size) {
  int secret = (spec->flags & CEB_CFG_SECRET) != 0;
  const char *tname = ceb_conf_type_name((int)spec->type);
  int64_t i64 = 0;
  uint64_t u64 = 0;
  double rate = 0;
  int b;
  int parsed = 1;   /* value has the right form */
  int in_range = 1; /* and lies within [min, max] */
  hint[0] = '\0';

  if (!*value && (spec->type != CEB_CFG_STRING && spec->type != CEB_CFG_LIST)) {
    snprintf(msg, msg_size, "empty value for %s", label);
    snprintf(hint, hint_size, "%s", type_example(spec));
    return CEB_EINVAL;
  }
  if (!*value && (spec->flags & CEB_CFG_REQUIRED)) {
    snprintf(msg, msg_size, "empty value for required %s", label);
    snprintf(hint, hint_size, "%.200s",
             spec->description ? spec->description : "");
    return CEB_EINVAL;
  }
  switch (spec->type) {
  case CEB_CFG_STRING:
  case CEB_CFG_LIST:
    return CEB_OK;
  case CEB_CFG_INT:
    parsed = ceb_parse_int(value, &i64) == CEB_OK;
    in_range = !has_range(spec) ||
               (i64 >= spec->min && (!has_max(spec) || i64 <= spec->max));
    break;
  case CEB_CFG_BOOL:
    parsed = ceb_parse_bool(value, &b) == CEB_OK;
    break;
  case CEB_CFG_DURATION:
    parsed = ceb_parse_duration_ms(value, &i64) == CEB_OK;
    in_range = !has_range(spec) ||
               (i64 >= spec->min && (!has_max(spec) || i64 <= spec->max));
    break;
  case CEB_CFG_SIZE:
    parsed = ceb_parse_size(value, &u64) == CEB_OK;
    in_range =
        !has_range(spec) || ((spec->min <= 0 || u64 >= (uint64_t)spec->min) &&
                             (!has_max(spec) || u64 <= (uint64_t)spec->max));
    break;
  case CEB_CFG_RATE:
    parsed = ceb_parse_rate(value, &rate) == CEB_OK;
    in_range =
        !has_range(spec) || (rate >= (double)spec->min &&
                             (!has_max(spec) || rate <= (double)spec->max));
    break;
  case CEB_CFG_ENUM:
    if (!enum_has(spec->choices, value)) {
      if (secret)
        snprintf(msg, msg_size, "invalid value for secret %s; value not shown",
                 label);
      else
        snprintf(msg, msg_size, "invalid value '%.64s' for %s", value, label);
      enum_hint(spec, value, secret, hint, hint_size);
      return CEB_EINVAL;
    }
    return CEB_OK;
  case CEB_CFG_ADDRESS: {
    char host[256];
    int port;
    parsed = ceb_parse_address(value, host, sizeof host, &port) == CEB_OK;
    break;
  }
  case CEB_CFG_URL:
    parsed = url_ok(value);
    break;
  case CEB_CFG_PATH:
    for (const char *p = value; *p; p++)
      if ((unsigned char)*p < 0x20) parsed = 0;
    break;
  default:
    snprintf(msg, msg_size, "%s has an unknown type %d in its spec", label,
             (int)spec->type);
    return CEB_EINVAL;
  }
  if (!parsed) {
    if (secret)
      snprintf(msg, msg_size, "invalid %s for secret %s; value not shown",
               tname, label);
    else
      snprintf(msg, msg_size, "invalid %s '%.64s' for %s", tname, value, label);
    snprintf(hint, hint_size, "%s", type_example(spec));
    return CEB_EINVAL;
  }
  if (!in_range) {
    char lo[48], hi[48];
    format_bound(spec, spec->min, lo, sizeof lo);
    format_bound(spec, spec->max, hi, sizeof hi);
    if (secret)
      snprintf(msg, msg_size, "secret %s is out of range; value not shown",
               label);
    else
      snprintf(msg, msg_size, "%s '%.64s' is out of range for %s", tname, value,
               label);
    if (has_max(spec))
      snprintf(hint, hint_size, "allowed: %s .. %s", lo, hi);
    else
      snprintf(hint, hint_size, "allowed: at least %s", lo);
    return CEB_EINVAL;
  }
  return CEB_OK;
}
