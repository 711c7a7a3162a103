/* The SDK value parsers: every accepted form and the rejected ones. */
#include <ceb/config.h>

#include "ceb_test.h"

static void durations(void) {
  static const struct {
    const char *text;
    int64_t ms;
  } ok[] = {{"250ms", 250},
            {"5s", 5000},
            {"5m", 300000},
            {"2h", 7200000},
            {"7d", 604800000},
            {"1h30m", 5400000},
            {"0s", 0},
            {"0", 0},
            {"1d2h3m4s5ms", 93784005},
            {"90s", 90000},
            {"9223372036854775807ms", INT64_MAX}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int64_t ms = -1;
    CHECK_MSG(ceb_parse_duration_ms(ok[i].text, &ms) == CEB_OK, "%s",
              ok[i].text);
    CHECK_INT(ms, ok[i].ms);
  }
  static const char *const bad[] = {"",
                                    "-5s",
                                    "5",
                                    "s",
                                    "5x",
                                    "5 s",
                                    " 5s",
                                    "5s ",
                                    "1.5h",
                                    "30m1h",
                                    "5m5m",
                                    "5sec",
                                    "5S",
                                    "h1",
                                    "1h30",
                                    "+5s",
                                    "5ms5s",
                                    "9223372036854775808ms",
                                    "106751991168d" /* overflows int64 ms */,
                                    "106751991167d8h",
                                    "99999999999999999999s"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t ms = 42;
    CHECK_MSG(ceb_parse_duration_ms(bad[i], &ms) == CEB_EINVAL, "'%s'", bad[i]);
    CHECK_INT(ms, 42); /* untouched on error */
  }
  int64_t ms;
  CHECK_INT(ceb_parse_duration_ms(NULL, &ms), CEB_EINVAL);
  CHECK_INT(ceb_parse_duration_ms("5s", NULL), CEB_EINVAL);
}

static void sizes(void) {
  static const struct {
    const char *text;
    uint64_t bytes;
  } ok[] = {{"512", 512},
            {"0", 0},
            {"512B", 512},
            {"64KiB", 65536},
            {"1MiB", 1048576},
            {"2GiB", 2147483648ULL},
            {"1TiB", 1099511627776ULL},
            {"10kB", 10000},
            {"10KB", 10000},
            {"1MB", 1000000},
            {"3GB", 3000000000ULL},
            {"18446744073709551615", UINT64_MAX}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    uint64_t b = 1;
    CHECK_MSG(ceb_parse_size(ok[i].text, &b) == CEB_OK, "%s", ok[i].text);
    CHECK_INT(b == ok[i].bytes, 1);
  }
  static const char *const bad[] = {"",
                                    "-1",
                                    "1.5MiB",
                                    "KiB",
                                    "10 kB",
                                    "10kb",
                                    "10kib",
                                    "1XB",
                                    " 1",
                                    "18446744073709551616",
                                    "17179869184GiB" /* 2^64 */};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t b = 7;
    CHECK_MSG(ceb_parse_size(bad[i], &b) == CEB_EINVAL, "'%s'", bad[i]);
    CHECK_INT(b, 7);
  }
}

static void rates(void) {
  static const struct {
    const char *text;
    double per_s;
  } ok[] = {{"200/s", 200},        {"1000/min", 1000.0 / 60},
            {"10/h", 10.0 / 3600}, {"5/m", 5.0 / 60},
            {"1/d", 1.0 / 86400},  {"0.5/s", 0.5},
            {"3/second", 3},       {"0/s", 0}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    double r = -1;
    CHECK_MSG(ceb_parse_rate(ok[i].text, &r) == CEB_OK, "%s", ok[i].text);
    CHECK_MSG(r > ok[i].per_s * 0.999999 - 1e-12 &&
                  r < ok[i].per_s * 1.000001 + 1e-12,
              "%s gave %f", ok[i].text, r);
  }
  static const char *const bad[] = {"",       "200",  "/s",    "200/",
                                    "200/x",  "-1/s", "1e3/s", "200/ s",
                                    "200/ms", ".5/s", "5./s",  "nan/s"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    double r = 9;
    CHECK_MSG(ceb_parse_rate(bad[i], &r) == CEB_EINVAL, "'%s'", bad[i]);
    CHECK(r == 9);
  }
}

static void bools(void) {
  static const char *const yes[] = {"true", "yes", "on", "1", "TRUE", "Yes"};
  static const char *const no[] = {"false", "no", "off", "0", "False", "OFF"};
  for (size_t i = 0; i < 6; i++) {
    int v = -1;
    CHECK_INT(ceb_parse_bool(yes[i], &v), CEB_OK);
    CHECK_INT(v, 1);
    v = -1;
    CHECK_INT(ceb_parse_bool(no[i], &v), CEB_OK);
    CHECK_INT(v, 0);
  }
  static const char *const bad[] = {"",      "2",     "y",      "n",
                                    "truee", " true", "enabled"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int v = 5;
    CHECK_MSG(ceb_parse_bool(bad[i], &v) == CEB_EINVAL, "'%s'", bad[i]);
    CHECK_INT(v, 5);
  }
}

static void ints(void) {
  int64_t v;
  CHECK_INT(ceb_parse_int("42", &v), CEB_OK);
  CHECK_INT(v, 42);
  CHECK_INT(ceb_parse_int("-17", &v), CEB_OK);
  CHECK_INT(v, -17);
  CHECK_INT(ceb_parse_int("9223372036854775807", &v), CEB_OK);
  CHECK(v == INT64_MAX);
  CHECK_INT(ceb_parse_int("-9223372036854775808", &v), CEB_OK);
  CHECK(v == INT64_MIN);
  static const char *const bad[] = {"",
                                    "-",
                                    "+1",
                                    "1.0",
                                    "0x10",
                                    "1k",
                                    " 1",
                                    "1 ",
                                    "--1",
                                    "9223372036854775808",
                                    "-9223372036854775809"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 3;
    CHECK_MSG(ceb_parse_int(bad[i], &v) == CEB_EINVAL, "'%s'", bad[i]);
    CHECK_INT(v, 3);
  }
}

static void addresses(void) {
  char host[64];
  int port = -1;
  CHECK_INT(ceb_parse_address("127.0.0.1:8081", host, sizeof host, &port),
            CEB_OK);
  CHECK_STR(host, "127.0.0.1");
  CHECK_INT(port, 8081);
  CHECK_INT(
      ceb_parse_address("kafka-1.example.nl:9092", host, sizeof host, &port),
      CEB_OK);
  CHECK_STR(host, "kafka-1.example.nl");
  CHECK_INT(port, 9092);
  CHECK_INT(ceb_parse_address("[::1]:0", host, sizeof host, &port), CEB_OK);
  CHECK_STR(host, "::1");
  CHECK_INT(port, 0);
  CHECK_INT(ceb_parse_address("[2001:db8::7]:65535", host, sizeof host, &port),
            CEB_OK);
  CHECK_STR(host, "2001:db8::7");
  CHECK_INT(port, 65535);
  CHECK_INT(ceb_parse_address("localhost:1", NULL, 0, &port), CEB_OK);
  CHECK_INT(port, 1);
  static const char *const bad[] = {
      "",           "localhost", ":80",      "host:",      "host:65536",
      "host:-1",    "host:8o",   "::1:80",   "[::1]",      "[::1]80",
      "[zz::1]:80", "[]:80",     "ho st:80", "host..x:80", "host:0080080",
      "a:b:80",     "[::1]:80x", "host:+80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    port = -7;
    CHECK_MSG(ceb_parse_address(bad[i], host, sizeof host, &port) == CEB_EINVAL,
              "'%s'", bad[i]);
    CHECK_INT(port, -7);
  }
  char tiny[4];
  CHECK_INT(ceb_parse_address("example:80", tiny, sizeof tiny, &port),
            CEB_EINVAL);
}

int main(void) {
  durations();
  sizes();
  rates();
  bools();
  ints();
  addresses();
  return ceb_test_done("unit_config_parse");
}
