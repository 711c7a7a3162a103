/* Semver precedence and pin resolution (exact, ^, ~; pre-releases out). */
#include "ceb_test.h"
#include <ceb/semver.h>

static long resolve(const char *pin_text, const char *const *versions,
                    size_t n) {
  ceb_semver_pin pin;
  char err[256];
  if (ceb_semver_pin_parse(pin_text, &pin, err, sizeof err) != 0) return -2;
  return ceb_semver_pin_resolve(&pin, versions, n);
}

int main(void) {
  ceb_semver a, b;
  CHECK_INT(ceb_semver_parse("1.2.3", 0, &a), 0);
  CHECK_INT(a.major, 1);
  CHECK_INT(a.minor, 2);
  CHECK_INT(a.patch, 3);
  CHECK_INT(ceb_semver_parse("1.2", 0, &a), -1);
  CHECK_INT(ceb_semver_parse("1.2", 1, &a), 0);
  CHECK_INT(ceb_semver_parse("01.2.3", 0, &a), -1);
  CHECK_INT(ceb_semver_parse("1.2.3.4", 0, &a), -1);
  CHECK_INT(ceb_semver_parse("1.2.3-", 0, &a), -1);
  CHECK_INT(ceb_semver_parse("1.2.3-rc..1", 0, &a), -1);
  CHECK_INT(ceb_semver_parse("1.2.3-rc.1+build.5", 0, &a), 0);
  CHECK_STR(a.pre, "rc.1");
  CHECK_INT(ceb_semver_parse("v2.0.0", 0, &a), 0);
  CHECK_INT(a.major, 2);

  /* semver.org §11 example order. */
  const char *order[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                         "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                         "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                         "1.10.0",      "2.0.0"};
  for (size_t i = 0; i + 1 < sizeof order / sizeof order[0]; i++) {
    CHECK(ceb_semver_parse(order[i], 0, &a) == 0);
    CHECK(ceb_semver_parse(order[i + 1], 0, &b) == 0);
    CHECK_MSG(ceb_semver_cmp(&a, &b) < 0, "%s < %s", order[i], order[i + 1]);
    CHECK_MSG(ceb_semver_cmp(&b, &a) > 0, "%s > %s", order[i + 1], order[i]);
  }
  CHECK_INT(ceb_semver_cmp_text("1.0.0+a", "1.0.0+b"), 0);
  CHECK(ceb_semver_cmp_text("1.9.0", "1.10.0") < 0);

  const char *held[] = {"1.0.0", "1.2.0", "1.2.7", "1.5.0-rc.1", "1.4.1",
                        "2.0.0", "0.2.1", "0.3.0", "2024-05"};
  size_t n = sizeof held / sizeof held[0];
  CHECK_INT(resolve("duo@^1", held, n), 4); /* 1.4.1, not the rc */
  CHECK_INT(resolve("duo@^1.3", held, n), 4);
  CHECK_INT(resolve("duo@~1.2", held, n), 2); /* 1.2.7 */
  CHECK_INT(resolve("duo@~1.2.3", held, n), 2);
  CHECK_INT(resolve("duo@~1", held, n), 4);
  CHECK_INT(resolve("duo@1.2.0", held, n), 1);      /* exact */
  CHECK_INT(resolve("duo@1.5.0-rc.1", held, n), 3); /* exact may pin an rc */
  CHECK_INT(resolve("duo@2024-05", held, n), 8);
  CHECK_INT(resolve("duo@^2", held, n), 5);
  CHECK_INT(resolve("duo@^3", held, n), -1);
  CHECK_INT(resolve("duo@^0.2", held, n), 6); /* 0.x: same minor */
  CHECK_INT(resolve("duo@1.3.0", held, n), -1);
  CHECK_INT(resolve("duo@^x", held, n), -2);
  CHECK_INT(resolve("@^1", held, n), -2);
  CHECK_INT(resolve("duo", held, n), -2);
  ceb_semver_pin pin;
  char err[256];
  CHECK_INT(
      ceb_semver_pin_parse("nl-duo.inschrijving@^1", &pin, err, sizeof err), 0);
  CHECK_STR(pin.name, "nl-duo.inschrijving");
  CHECK_INT(pin.kind, CEB_SEMVER_PIN_CARET);
  return ceb_test_done("unit_contracts_semver");
}
