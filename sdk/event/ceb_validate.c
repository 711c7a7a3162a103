// clang-format off
/* CloudEvents 1.0 and NL GOV profile validation.
 *
 * Violation codes (stable; docs/profile-conformance.md refers to this table).
 * Severity: "error" = always an error; "profile" = error at
 * CEB_PROFILE_ENFORCE, warning at CEB_PROFILE_WARN; "advice" = a SHOULD of
 * the profile (or project advice), a warning at WARN and ENFORCE, never an
 * error. Profile rules are silent at CEB_PROFILE_OFF.
 *
 * | code                          | sev     | rule                                              |
 * |-------------------------------|---------|---------------------------------------------------|
 * | ce.specversion.missing        | error   | specversion is REQUIRED                           |
 * | ce.specversion.unsupported    | error   | specversion must be "1.0"                         |
 * | ce.id.missing                 | error   | id is REQUIRED                                    |
 * | ce.id.empty                   | error   | id must be a non-empty string                     |
 * | ce.source.missing             | error   | source is REQUIRED                                |
 * | ce.source.empty               | error   | source must be non-empty                          |
 * | ce.source.invalid             | error   | source must be a URI-reference (RFC 3986)         |
 * | ce.type.missing               | error   | type is REQUIRED                                  |
 * | ce.type.empty                 | error   | type must be a non-empty string                   |
 * | ce.datacontenttype.invalid    | error   | datacontenttype must be an RFC 2046 media type    |
 * | ce.dataschema.invalid         | error   | dataschema must be a non-empty absolute URI       |
 * | ce.subject.empty              | error   | subject, when present, must be non-empty          |
 * | ce.time.invalid               | error   | time must be an RFC 3339 timestamp                |
 * | ce.attr.name                  | error   | attribute names use only a-z and 0-9              |
 * | ce.attr.reserved              | error   | "data"/"data_base64" cannot be attribute names    |
 * | ce.attr.boolean               | error   | a Boolean extension is "true" or "false"          |
 * | ce.attr.integer               | error   | an Integer extension is a 32-bit signed decimal   |
 * | ce.attr.binary                | error   | a Binary extension is base64                      |
 * | ce.attr.uri                   | error   | a URI extension is an absolute URI                |
 * | ce.attr.uri_ref               | error   | a URI-reference extension is a URI-reference      |
 * | ce.attr.timestamp             | error   | a Timestamp extension is RFC 3339                 |
 * | ce.attr.string                | error   | a String value has no control characters,         |
 * |                               |         | surrogates or noncharacters (CloudEvents 1.0.2    |
 * |                               |         | type system; every attribute, whatever its type)  |
 * | ce.attr.utf8                  | error   | an attribute value is well-formed UTF-8           |
 * | ce.data.json                  | error   | JSON-kind data must be one valid JSON value       |
 * | ce.data.text                  | error   | text-kind data must be valid UTF-8                |
 * | event.too_large               | error   | ceb_event_size() over max_size (default 64 KiB)   |
 * | nlgov.source.urn              | profile | a urn:nld: source is well-formed: a non-empty     |
 * |                               |         | name, urn:nld:oin:<20-digit OIN>[:. ...],         |
 * |                               |         | urn:nld:kvknr:<8-digit KvK number>[:. ...]        |
 * | nlgov.source.nld_urn          | advice  | source SHOULD be a URN with namespace 'nld'       |
 * | nlgov.type.reverse_dns        | profile | type MUST be reverse-DNS: tld.name[.name...]      |
 * | nlgov.type.version            | profile | at most one version label (v<digits>) in type     |
 * | nlgov.attr.name_length        | profile | attribute names are at most 20 characters         |
 * | nlgov.datacontenttype.json    | advice  | JSON SHOULD be used for data                      |
 * | nlgov.time.missing            | advice  | time is not set (project advice: routing and      |
 * |                               |         | replay filters use it; the profile is silent)     |
 * | nlgov.dataref.invalid         | profile | dataref is a URI-reference                        |
 * | nlgov.sequence.missing        | profile | sequencetype without sequence                     |
 * | nlgov.sequence.empty          | profile | sequence, when present, is non-empty              |
 * | nlgov.sequence.integer        | profile | sequencetype Integer: sequence is a 32-bit int    |
 * | nlgov.sequencetype.empty      | profile | sequencetype, when present, is non-empty          |
 * | nlgov.sequencetype.unknown    | advice  | sequencetype other than Integer (the only value   |
 * |                               |         | the profile defines; compared case-insensitively) |
 *
 * Source: NL GOV profile for CloudEvents, "Context Attributes" and "Size
 * Limits" (Logius, github.com/Logius-standaarden/NL-GOV-profile-for-CloudEvents).
 * The profile's id advice (a UUID when no persistent id exists) cannot be
 * checked from the event alone and is not a rule here.
 */
// clang-format on
#include "ceb_event_internal.h"

#include <ceb/validate.h>

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_MAX_SIZE 65536
#define NLGOV_NAME_MAX 20

typedef enum rule_sev { SEV_ERROR, SEV_PROFILE, SEV_ADVICE } rule_sev;

typedef struct ctx {
  ceb_violations *out;
  ceb_profile_level nlgov;
} ctx;

static void add(ctx *c, rule_sev rs, const char *code, const char *attr,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void add(ctx *c, rule_sev rs, const char *code, const char *attr,
                const char *fmt, ...) {
  ceb_severity sev = CEB_SEV_ERROR;
  if (rs == SEV_ADVICE ||
      (rs == SEV_PROFILE && c->nlgov != CEB_PROFILE_ENFORCE))
    sev = CEB_SEV_WARNING;
  ceb_violations *out = c->out;
  if (sev == CEB_SEV_ERROR)
    out->errors++;
  else
    out->warnings++;
  if (out->count == CEB_MAX_VIOLATIONS) {
    out->truncated = 1;
    return;
  }
  ceb_violation *v = &out->items[out->count++];
  v->code = code;
  v->severity = sev;
  snprintf(v->attribute, sizeof v->attribute, "%s", attr ? attr : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->message, sizeof v->message, fmt, ap);
  va_end(ap);
}

int ceb_valid_attr_name(const char *name) {
  if (!name || !*name || strlen(name) > CEB_ATTR_NAME_MAX) return 0;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))) return 0;
  return 1;
}

/* Decimal 32-bit signed integer in canonical-enough form ("-0" allowed). */
static int valid_int32(const char *s) {
  if (!s || !*s) return 0;
  const char *p = *s == '-' || *s == '+' ? s + 1 : s;
  if (!*p) return 0;
  for (const char *q = p; *q; q++)
    if (*q < '0' || *q > '9') return 0;
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  return errno == 0 && v >= INT32_MIN && v <= INT32_MAX;
}

static int valid_base64(const char *s) {
  unsigned char *bytes;
  size_t n;
  if (ceb_base64_decode(s, strlen(s), &bytes, &n) != CEB_OK) return 0;
  free(bytes);
  return 1;
}

static void check_required(ctx *c, const ceb_event *ev) {
  static const char *const required[] = {"specversion", "id", "source", "type"};
  static const char *const missing[] = {"ce.specversion.missing",
                                        "ce.id.missing", "ce.source.missing",
                                        "ce.type.missing"};
  static const char *const empty[] = {"ce.specversion.unsupported",
                                      "ce.id.empty", "ce.source.empty",
                                      "ce.type.empty"};
  for (size_t i = 0; i < 4; i++) {
    const char *v = ceb_event_get(ev, required[i]);
    if (!v)
      add(c, SEV_ERROR, missing[i], required[i],
          "required attribute '%s' is missing", required[i]);
    else if (!*v)
      add(c, SEV_ERROR, empty[i], required[i],
          "required attribute '%s' is empty", required[i]);
  }
  const char *sv = ceb_event_get(ev, "specversion");
  if (sv && *sv && strcmp(sv, "1.0") != 0)
    add(c, SEV_ERROR, "ce.specversion.unsupported", "specversion",
        "specversion '%.32s' is not supported (only 1.0)", sv);
}

static void check_context(ctx *c, const ceb_event *ev) {
  const char *v;
  if ((v = ceb_event_get(ev, "source")) && *v && !ceb_valid_uri_ref(v))
    add(c, SEV_ERROR, "ce.source.invalid", "source",
        "source is not a URI-reference (RFC 3986)");
  if ((v = ceb_event_get(ev, "datacontenttype")) && !ceb_valid_media_type(v))
    add(c, SEV_ERROR, "ce.datacontenttype.invalid", "datacontenttype",
        "datacontenttype '%.64s' is not an RFC 2046 media type", v);
  if ((v = ceb_event_get(ev, "dataschema")) && !ceb_valid_uri(v))
    add(c, SEV_ERROR, "ce.dataschema.invalid", "dataschema",
        "dataschema is not a non-empty absolute URI");
  if ((v = ceb_event_get(ev, "subject")) && !*v)
    add(c, SEV_ERROR, "ce.subject.empty", "subject",
        "subject, when present, must not be empty");
  if ((v = ceb_event_get(ev, "time")) && !ceb_valid_timestamp(v))
    add(c, SEV_ERROR, "ce.time.invalid", "time",
        "time '%.48s' is not an RFC 3339 timestamp", v);
}

static void check_typed(ctx *c, const char *name, const char *v,
                        ceb_attr_type t) {
  switch (t) {
  case CEB_ATTR_BOOLEAN:
    if (strcmp(v, "true") && strcmp(v, "false"))
      add(c, SEV_ERROR, "ce.attr.boolean", name,
          "'%s' must be \"true\" or \"false\"", name);
    break;
  case CEB_ATTR_INTEGER:
    if (!valid_int32(v))
      add(c, SEV_ERROR, "ce.attr.integer", name,
          "'%s' must be a 32-bit signed integer", name);
    break;
  case CEB_ATTR_BINARY:
    if (!valid_base64(v))
      add(c, SEV_ERROR, "ce.attr.binary", name, "'%s' must be base64", name);
    break;
  case CEB_ATTR_URI:
    if (!ceb_valid_uri(v))
      add(c, SEV_ERROR, "ce.attr.uri", name, "'%s' must be an absolute URI",
          name);
    break;
  case CEB_ATTR_URI_REF:
    if (!ceb_valid_uri_ref(v))
      add(c, SEV_ERROR, "ce.attr.uri_ref", name, "'%s' must be a URI-reference",
          name);
    break;
  case CEB_ATTR_TIMESTAMP:
    if (!ceb_valid_timestamp(v))
      add(c, SEV_ERROR, "ce.attr.timestamp", name,
          "'%s' must be an RFC 3339 timestamp", name);
    break;
  default:
    break;
  }
}

/* The String rule on every value (ceb_ce_string.c). The message names the
 * code point as U+XXXX, never the byte itself: it is echoed to clients and
 * written to logs. */
static void check_string(ctx *c, const char *name, const char *v) {
  uint32_t cp;
  size_t at;
  cebi_str_fault f = cebi_ce_string_check(v, &cp, &at);
  if (f == CEBI_STR_OK) return;
  /* a name that breaks ce.attr.name may hold anything: not repeated */
  const char *shown = ceb_valid_attr_name(name) ? name : "(invalid name)";
  if (f == CEBI_STR_UTF8) {
    add(c, SEV_ERROR, "ce.attr.utf8", name,
        "'%s' is not valid UTF-8 (byte 0x%02X at offset %zu)", shown,
        (unsigned)(unsigned char)v[at], at);
    return;
  }
  const char *what = f == CEBI_STR_CONTROL     ? "a control character"
                     : f == CEBI_STR_SURROGATE ? "a surrogate"
                                               : "a noncharacter";
  add(c, SEV_ERROR, "ce.attr.string", name,
      "'%s' contains U+%04X (%s) at byte %zu; a CloudEvents String has no "
      "control characters, surrogates or noncharacters",
      shown, (unsigned)cp, what, at);
}

static void check_name_length(ctx *c, const char *name) {
  if (strlen(name) > NLGOV_NAME_MAX)
    add(c, SEV_PROFILE, "nlgov.attr.name_length", name,
        "attribute name '%.64s' is longer than %d characters", name,
        NLGOV_NAME_MAX);
}

static void check_attributes(ctx *c, const ceb_event *ev) {
  size_t n = ceb_event_attr_count(ev);
  for (size_t i = 0; i < n; i++) {
    const char *name, *v;
    ceb_attr_type t;
    ceb_event_attr_at(ev, i, &name, &v, &t);
    if (!strcmp(name, "data") || !strcmp(name, "data_base64"))
      add(c, SEV_ERROR, "ce.attr.reserved", name,
          "'%s' is reserved by the JSON format", name);
    else if (!ceb_valid_attr_name(name))
      add(c, SEV_ERROR, "ce.attr.name", name,
          "attribute name '%.64s' must use only a-z and 0-9", name);
    check_string(c, name, v);
    if (!ceb_attr_is_context(name)) check_typed(c, name, v, t);
    if (c->nlgov != CEB_PROFILE_OFF) check_name_length(c, name);
  }
}

/* The profile's rule among the attribute checks, for a checked event. */
static void check_name_lengths(ctx *c, const ceb_event *ev) {
  size_t n = ceb_event_attr_count(ev);
  for (size_t i = 0; i < n; i++) {
    const char *name, *v;
    ceb_attr_type t;
    ceb_event_attr_at(ev, i, &name, &v, &t);
    check_name_length(c, name);
  }
}

static void check_data(ctx *c, const ceb_event *ev) {
  size_t len;
  const char *data = ceb_event_data(ev, &len);
  ceb_data_kind kind = ceb_event_data_kind(ev);
  if (kind == CEB_DATA_JSON && !cebi_event_json_trusted(ev)) {
    json_t *j = json_loadb(data, len, JSON_DECODE_ANY, NULL);
    if (!j)
      add(c, SEV_ERROR, "ce.data.json", "",
          "data marked as JSON is not one valid JSON value");
    json_decref(j);
  } else if (kind == CEB_DATA_TEXT && !cebi_utf8_valid(data, len)) {
    add(c, SEV_ERROR, "ce.data.text", "", "text data is not valid UTF-8");
  }
}

/* Digits at s, exactly n of them, followed by the end, ':' or '.'. */
static int id_digits(const char *s, int n) {
  for (int i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return s[n] == '\0' || ((s[n] == ':' || s[n] == '.') && s[n + 1]);
}

/* urn:nld:<name>, as in the profile's examples
 * (urn:nld:oin:00000001823288444000:systeem:BRP-component,
 * urn:nld:kvknr:09220932.burgerzakensysteem,
 * urn:nld:gemeente-nijmegen.burgerzakensysteem); OIN and KvK identifiers are
 * checked for their digit counts. */
static int nlgov_urn_ok(const char *s) {
  const char *rest = s + 8; /* after "urn:nld:" */
  if (!*rest) return 0;
  if (strncasecmp(rest, "oin:", 4) == 0 && !id_digits(rest + 4, 20)) return 0;
  if (strncasecmp(rest, "kvknr:", 6) == 0 && !id_digits(rest + 6, 8)) return 0;
  return ceb_valid_uri(s);
}

/* Counts type labels that are a version: 'v' followed by digits only. */
static int version_labels(const char *type) {
  int n = 0;
  for (const char *p = type; *p;) {
    const char *end = strchr(p, '.');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len >= 2 && p[0] == 'v' && strspn(p + 1, "0123456789") >= len - 1) n++;
    p += len + (end ? 1 : 0);
  }
  return n;
}

/* Reverse-DNS: a letters-only top-level label, then one or more labels of
 * letters, digits, '-' and '_'. */
static int reverse_dns_ok(const char *s) {
  const char *p = s;
  while (*p >= 'a' && *p <= 'z')
    p++;
  if (p - s < 2 || *p != '.') return 0;
  int labels = 0;
  while (*p == '.') {
    const char *start = ++p;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
           (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')
      p++;
    if (p == start) return 0;
    labels++;
  }
  return *p == '\0' && labels >= 1;
}

static void check_nlgov(ctx *c, const ceb_event *ev) {
  const char *v;
  if ((v = ceb_event_get(ev, "source")) && *v) {
    if (strncasecmp(v, "urn:nld:", 8) == 0) {
      if (!nlgov_urn_ok(v))
        add(c, SEV_PROFILE, "nlgov.source.urn", "source",
            "malformed urn:nld: source (urn:nld:oin:<20-digit OIN>:..., "
            "urn:nld:kvknr:<8 digits>..., urn:nld:<name>)");
    } else {
      add(c, SEV_ADVICE, "nlgov.source.nld_urn", "source",
          "source should be a URN with namespace 'nld', such as "
          "urn:nld:oin:<OIN>:systeem:<name>");
    }
  }
  if ((v = ceb_event_get(ev, "type")) && *v) {
    if (!reverse_dns_ok(v))
      add(c, SEV_PROFILE, "nlgov.type.reverse_dns", "type",
          "type '%.64s' must be in reverse domain name notation, such as "
          "nl.overheid.zaken.zaakstatus-gewijzigd",
          v);
    if (version_labels(v) > 1)
      add(c, SEV_PROFILE, "nlgov.type.version", "type",
          "type '%.64s' must include at most one version (v<number>)", v);
  }
  if ((v = ceb_event_get(ev, "datacontenttype")) && ceb_valid_media_type(v) &&
      !ceb_media_type_is_json(v))
    add(c, SEV_ADVICE, "nlgov.datacontenttype.json", "datacontenttype",
        "JSON data is preferred by the profile, not '%.64s'", v);
  if (!ceb_event_get(ev, "time"))
    add(c, SEV_ADVICE, "nlgov.time.missing", "time",
        "time is not set; routing and replay filters cannot use it");
  if ((v = ceb_event_get(ev, "dataref")) && !ceb_valid_uri_ref(v))
    add(c, SEV_PROFILE, "nlgov.dataref.invalid", "dataref",
        "dataref must be a URI-reference");
  const char *seq = ceb_event_get(ev, "sequence");
  const char *seqtype = ceb_event_get(ev, "sequencetype");
  if (seq && !*seq)
    add(c, SEV_PROFILE, "nlgov.sequence.empty", "sequence",
        "sequence must be a non-empty string");
  if (!seqtype) return;
  if (!*seqtype) {
    add(c, SEV_PROFILE, "nlgov.sequencetype.empty", "sequencetype",
        "sequencetype, when present, must be a non-empty string");
    return;
  }
  if (!seq)
    add(c, SEV_PROFILE, "nlgov.sequence.missing", "sequence",
        "sequencetype is set but sequence is missing");
  if (strcasecmp(seqtype, "integer") == 0) {
    if (seq && *seq && !valid_int32(seq))
      add(c, SEV_PROFILE, "nlgov.sequence.integer", "sequence",
          "sequence must be a 32-bit signed integer when sequencetype is "
          "Integer");
  } else {
    add(c, SEV_ADVICE, "nlgov.sequencetype.unknown", "sequencetype",
        "sequencetype '%.32s' is not defined by the profile (Integer)",
        seqtype);
  }
}

size_t ceb_event_validate(const ceb_event *ev, const ceb_validate_opts *opts,
                          ceb_violations *out) {
  if (!out) return 1;
  /* items past count are never read: clearing all 32 (8 KiB) per event
   * showed in profiles */
  out->count = out->errors = out->warnings = 0;
  out->truncated = 0;
  ctx c = {out, CEB_PROFILE_OFF};
  size_t max_size = DEFAULT_MAX_SIZE;
  if (opts && opts->struct_size >= sizeof *opts) {
    c.nlgov = opts->nlgov;
    if (opts->max_size) max_size = opts->max_size;
  }
  if (!ev) {
    add(&c, SEV_ERROR, "ce.id.missing", "", "no event");
    return out->errors;
  }
  /* The CloudEvents rules run once per event content: a plugin that
   * validated (to answer per event of a batch) leaves the mark, and the
   * host's validation then runs only the limit and the profile rules. */
  if (!ceb_event_checked(ev)) {
    check_required(&c, ev);
    check_context(&c, ev);
    check_attributes(&c, ev);
    check_data(&c, ev);
    if (out->errors == 0) cebi_event_mark_ce_valid(ev);
  } else if (c.nlgov != CEB_PROFILE_OFF) {
    check_name_lengths(&c, ev);
  }
  size_t size = ceb_event_size(ev);
  if (size > max_size)
    add(&c, SEV_ERROR, "event.too_large", "",
        "event size %zu exceeds the limit of %zu bytes", size, max_size);
  if (c.nlgov != CEB_PROFILE_OFF) check_nlgov(&c, ev);
  return out->errors;
}
