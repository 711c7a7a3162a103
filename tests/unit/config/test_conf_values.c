/* ceb_conf_value_check: URL, address, path, enum and range forms, and the
 * rule that a SECRET value never appears in the message or hint. */
#include "config/ceb_conf_internal.h"

#include <string.h>

#include "ceb_test.h"

static int check(const ceb_config_spec *sp, const char *value, char *msg,
                 char *hint) {
  return ceb_conf_value_check(sp, value, "'k' in [sink s]", msg, 256, hint,
                              256);
}

int main(void) {
  char msg[256], hint[256];
  const ceb_config_spec url = {"k", CEB_CFG_URL, 0, NULL, 0, 0, NULL, "d"};
  static const char *const good_urls[] = {
      "http://h/", "https://idp.example.nl/oidc/certs?x=1#f", "HTTPS://H:8443",
      "http://[::1]:8080/p", "http://127.0.0.1:9/hook"};
  for (size_t i = 0; i < sizeof good_urls / sizeof good_urls[0]; i++)
    CHECK_MSG(check(&url, good_urls[i], msg, hint) == CEB_OK, "%s: %s",
              good_urls[i], msg);
  static const char *const bad_urls[] = {
      "ftp://h/",    "https://",        "idp.example.nl/x", "/relative",
      "http://a b/", "http://h:99999/", "mailto:x@y",       "https:///path"};
  for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
    CHECK_MSG(check(&url, bad_urls[i], msg, hint) == CEB_EINVAL, "%s",
              bad_urls[i]);
    CHECK(strstr(msg, "invalid url '") != NULL);
  }

  const ceb_config_spec path = {"k", CEB_CFG_PATH, 0, NULL, 0, 0, NULL, "d"};
  CHECK_INT(check(&path, "rel/x.db", msg, hint), CEB_OK);
  CHECK_INT(check(&path, "/abs", msg, hint), CEB_OK);
  CHECK_INT(check(&path, "", msg, hint), CEB_EINVAL);
  CHECK_STR(msg, "empty value for 'k' in [sink s]");
  CHECK_INT(check(&path, "a\tb", msg, hint), CEB_EINVAL);

  const ceb_config_spec addr = {"k", CEB_CFG_ADDRESS, 0, NULL, 0, 0, NULL, "d"};
  CHECK_INT(check(&addr, "[::1]:0", msg, hint), CEB_OK);
  CHECK_INT(check(&addr, "nohost", msg, hint), CEB_EINVAL);
  CHECK_STR(msg, "invalid address 'nohost' for 'k' in [sink s]");
  CHECK_STR(hint, "host:port or [v6addr]:port, port 0..65535");

  /* A minimum without maximum (max below min). */
  const ceb_config_spec minonly = {"k", CEB_CFG_INT, 0, NULL, 10, 0, NULL, "d"};
  CHECK_INT(check(&minonly, "1000000", msg, hint), CEB_OK);
  CHECK_INT(check(&minonly, "9", msg, hint), CEB_EINVAL);
  CHECK_STR(hint, "allowed: at least 10");

  const ceb_config_spec req = {
      "k", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL, "Why."};
  CHECK_INT(check(&req, "", msg, hint), CEB_EINVAL);
  CHECK_STR(msg, "empty value for required 'k' in [sink s]");
  CHECK_INT(check(&req, "x", msg, hint), CEB_OK);

  const ceb_config_spec en = {"k", CEB_CFG_ENUM,    0,  NULL, 0,
                              0,   "zstd|lz4|gzip", "d"};
  CHECK_INT(check(&en, "lz4", msg, hint), CEB_OK);
  CHECK_INT(check(&en, "zst", msg, hint), CEB_EINVAL);
  CHECK_STR(hint, "did you mean 'zstd'?");
  CHECK_INT(check(&en, "lz", msg, hint), CEB_EINVAL); /* prefix is not it */
  CHECK_INT(check(&en, "brotli", msg, hint), CEB_EINVAL);
  CHECK_STR(hint, "one of zstd|lz4|gzip");

  /* Secrets of every type: the value is in neither message nor hint. */
  static const struct {
    ceb_cfg_type type;
    int64_t min, max;
    const char *choices, *value;
  } secrets[] = {{CEB_CFG_INT, 0, 9, NULL, "SECRET1"},
                 {CEB_CFG_INT, 0, 9, NULL, "123456"},
                 {CEB_CFG_ENUM, 0, 0, "SECRETA|b", "SECRETB"},
                 {CEB_CFG_URL, 0, 0, NULL, "SECRET://x"},
                 {CEB_CFG_DURATION, 0, 1000, NULL, "99999h"},
                 {CEB_CFG_SIZE, 0, 1, NULL, "SECRETKiB"},
                 {CEB_CFG_BOOL, 0, 0, NULL, "SECRETBOOL"},
                 {CEB_CFG_ADDRESS, 0, 0, NULL, "SECRET"}};
  for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
    ceb_config_spec sp = {"k",
                          secrets[i].type,
                          CEB_CFG_SECRET,
                          NULL,
                          secrets[i].min,
                          secrets[i].max,
                          secrets[i].choices,
                          "d"};
    CHECK_INT(check(&sp, secrets[i].value, msg, hint), CEB_EINVAL);
    CHECK_MSG(!strstr(msg, secrets[i].value) && !strstr(hint, secrets[i].value),
              "leaked: %s (%s)", msg, hint);
    CHECK(strstr(msg, "not shown") != NULL);
  }
  return ceb_test_done("unit_conf_values");
}
