/* cebridge public SDK: CloudEvents 1.0 and NL GOV profile validation.
 *
 * Pure functions over an event; reentrant and thread-safe. Each violation has
 * a stable machine code (documented in docs/profile-conformance.md) and a
 * human message. CloudEvents violations are always errors; NL GOV violations
 * are errors at CEB_PROFILE_ENFORCE and warnings at CEB_PROFILE_WARN. */
#ifndef CEB_VALIDATE_H
#define CEB_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ceb_profile_level {
  CEB_PROFILE_OFF = 0,
  CEB_PROFILE_WARN = 1,
  CEB_PROFILE_ENFORCE = 2
} ceb_profile_level;

typedef enum ceb_severity { CEB_SEV_ERROR = 0, CEB_SEV_WARNING = 1 } ceb_severity;

typedef struct ceb_violation {
  const char *code;         /* static, stable: "ce.id.missing", "nlgov.source.urn" */
  ceb_severity severity;
  char attribute[64];       /* the attribute concerned, "" for the whole event */
  char message[192];
} ceb_violation;

#define CEB_MAX_VIOLATIONS 32

/* Caller-owned result; zero-initialise or let the validator reset it. Past
 * CEB_MAX_VIOLATIONS, `truncated` is set and further ones are counted only. */
typedef struct ceb_violations {
  size_t count;
  size_t errors;
  size_t warnings;
  int truncated;
  ceb_violation items[CEB_MAX_VIOLATIONS];
} ceb_violations;

typedef struct ceb_validate_opts {
  uint32_t struct_size;    /* sizeof(ceb_validate_opts) */
  ceb_profile_level nlgov; /* NL GOV profile level */
  size_t max_size;         /* ceb_event_size() limit; 0 = 65536 (profile default) */
} ceb_validate_opts;

/* Validates ev. opts NULL means CloudEvents only, 64 KiB limit. Resets the
 * counts of *out and fills items[0..count) (later items are not touched).
 * Returns the number of errors (0 = valid). */
size_t ceb_event_validate(const ceb_event *ev, const ceb_validate_opts *opts,
                          ceb_violations *out);

/* 1 when ceb_event_validate() found no CloudEvents error in ev since its
 * last change (any ceb_event_set*() clears it). A later validation trusts
 * that and runs only the size limit and the profile rules, so an event that
 * a plugin validated is not checked against the CloudEvents rules again by
 * the host. Thread-safe. (Appended in ABI 1.1.) */
int ceb_event_checked(const ceb_event *ev);

/* Single-rule helpers reused by codecs, config and plugins. 1 = valid. */
int ceb_valid_attr_name(const char *name);     /* a-z0-9, 1..20 recommended, <= 64 */
int ceb_valid_timestamp(const char *rfc3339);  /* RFC 3339 date-time */
int ceb_valid_uri(const char *uri);            /* absolute URI (RFC 3986) */
int ceb_valid_uri_ref(const char *uri_ref);    /* URI-reference (RFC 3986) */
int ceb_valid_media_type(const char *type);    /* RFC 2046 type/subtype[;params] */
/* RFC 3339 timestamp to milliseconds since the epoch; CEB_EINVAL if invalid. */
int ceb_timestamp_parse(const char *rfc3339, int64_t *ms_out);
/* Formats ms since the epoch as RFC 3339 UTC with milliseconds into buf
 * (at least 32 bytes). */
void ceb_timestamp_format(int64_t ms, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
