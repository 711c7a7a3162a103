/* Semantic versions (semver.org 2.0.0) and contract pins.
 *
 * A pin is "NAME@SPEC" where SPEC is an exact version ("1.2.0", matched
 * as text, so non-semver versions such as "2024-05" can be pinned too),
 * "^1" / "^1.2" / "^1.2.3" (same major; for 0.x the same minor) or "~1.2" /
 * "~1.2.3" (same major.minor). Ranges select the highest matching held
 * version and never a pre-release.
 *
 * Part of the SDK (libceb): the host's contract registry and the asyncapi
 * plugin resolve pins with the same code. Pure functions; thread-safe; no
 * allocation. */
#ifndef CEB_SEMVER_H
#define CEB_SEMVER_H

#include <stddef.h>

typedef struct ceb_semver {
  long major, minor, patch;
  char pre[64]; /* pre-release identifiers, "" for a release */
} ceb_semver;

/* Parses "1.2.3", "1.2.3-rc.1", "1.2.3+build" (build ignored), and a
 * leading "v". partial != 0 also accepts "1" and "1.2" (missing parts 0).
 * Returns 0 on success, -1 when text is not such a version. */
int ceb_semver_parse(const char *text, int partial, ceb_semver *out);

/* Precedence per semver 2.0.0 §11: < 0, 0, > 0. */
int ceb_semver_cmp(const ceb_semver *a, const ceb_semver *b);

/* Compares two version strings: semver precedence when both parse, else
 * byte order (non-semver versions sort before semver ones). */
int ceb_semver_cmp_text(const char *a, const char *b);

typedef enum ceb_semver_pin_kind {
  CEB_SEMVER_PIN_EXACT = 0,
  CEB_SEMVER_PIN_CARET = 1,
  CEB_SEMVER_PIN_TILDE = 2
} ceb_semver_pin_kind;

typedef struct ceb_semver_pin {
  char name[128];
  char spec[64]; /* text after '@' */
  ceb_semver_pin_kind kind;
  ceb_semver base; /* CARET/TILDE: the lower bound */
  int parts;       /* CARET/TILDE: how many parts were written (1..3) */
} ceb_semver_pin;

/* Parses "NAME@SPEC". Returns 0, or -1 with a reason in err. */
int ceb_semver_pin_parse(const char *text, ceb_semver_pin *out, char *err,
                         size_t errlen);

/* 1 when version satisfies the pin. */
int ceb_semver_pin_matches(const ceb_semver_pin *pin, const char *version);

/* Index of the version in versions[0..n) the pin resolves to (exact match,
 * or the highest release in range), -1 when none. */
long ceb_semver_pin_resolve(const ceb_semver_pin *pin,
                            const char *const *versions, size_t n);

#endif
