/* Log forging: whatever an event id, a route, a client, a component or the
 * message holds (newlines, carriage returns, ESC, DEL, C1 controls, line
 * separators, bidi overrides, bytes that are not UTF-8), every record is
 * exactly one line, with no control character in it, in the text format
 * (fields quoted when they hold a space, '"' or '=') and in the JSON format
 * (each line valid JSON, its strings valid UTF-8). */
#include "log/ceb_log.h"
#include "log/ceb_log_escape.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

/* Each hostile value, and its escaped form in a JSON record (and in a text
 * record, unquoted). */
static const struct {
  const char *raw, *escaped;
} cases[] = {
    {"a\nb", "a\\nb"},
    {"x\r\nforged 2026-01-01T00:00:00.000Z error  [core] pwned",
     "x\\r\\nforged 2026-01-01T00:00:00.000Z error  [core] pwned"},
    {"\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"},
    {"del\x7f", "del\\x7f"},
    {"nul-free\x01\x1f", "nul-free\\x01\\x1f"},
    {"tab\there", "tab\\there"},
    {"nel\xc2\x85"
     "csi\xc2\x9b"
     "2J",
     "nel\\u0085csi\\u009b2J"},
    {"ls\xe2\x80\xa8ps\xe2\x80\xa9", "ls\\u2028ps\\u2029"},
    {"rlo\xe2\x80\xae"
     "txt",
     "rlo\\u202etxt"},
    {"bad\xff\xfe", "bad\\xff\\xfe"},
    {"cut\xc3", "cut\\xc3"},
    {"overlong\xc0\xaf", "overlong\\xc0\\xaf"},
    {"raw C1 \x85\x9b", "raw C1 \\x85\\x9b"},
    {"back\\slash", "back\\\\slash"},
    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", /* kept as they are */
     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
};
#define NCASES (sizeof cases / sizeof *cases)

static void test_escape(void) {
  for (size_t i = 0; i < NCASES; i++) {
    char *e = ceb_log_escape_dup(cases[i].raw, 0);
    CHECK_STR(e, cases[i].escaped);
    free(e);
  }
  char *q = ceb_log_escape_dup("x route=evil \"q\"", 1);
  CHECK_STR(q, "\"x route=evil \\\"q\\\"\"");
  free(q);
  q = ceb_log_escape_dup("", 1);
  CHECK_STR(q, "\"\"");
  free(q);
  q = ceb_log_escape_dup("plain-id", 1);
  CHECK_STR(q, "plain-id");
  free(q);
  /* the worst case fits the documented bound */
  char worst[64];
  memset(worst, 0xff, sizeof worst - 1);
  worst[sizeof worst - 1] = '\0';
  char out[CEB_LOG_ESCAPED_MAX(sizeof worst - 1)];
  CHECK_INT(ceb_log_escape(worst, sizeof worst - 1, 1, out),
            4 * (sizeof worst - 1));
}

/* Writes one record per case (the value in every field and in the
 * message) and returns the output. */
static char *write_records(ceb_log_format fmt, size_t *len) {
  FILE *f = tmpfile();
  ceb_log_configure(CEB_LOG_DEBUG, fmt, f);
  for (size_t i = 0; i < NCASES; i++) {
    ceb_log_ctx ctx = {cases[i].raw, cases[i].raw, cases[i].raw, NULL};
    ceb_log_write(CEB_LOG_WARN, cases[i].raw, &ctx, "event %s refused",
                  cases[i].raw);
  }
  ceb_log_write(CEB_LOG_INFO, NULL, NULL, "%s", "plain");
  ceb_log_configure(CEB_LOG_INFO, CEB_LOGFMT_JSON, NULL);
  long n = ftell(f);
  rewind(f);
  char *buf = calloc(1, (size_t)n + 1);
  CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* Splits on '\n'; checks that no line holds a control byte and that there
 * is one line per record. Returns the lines (buf is modified). */
static size_t lines_of(char *buf, size_t len, char **lines, size_t max) {
  size_t n = 0;
  char *start = buf;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c == '\n') {
      buf[i] = '\0';
      if (n < max) lines[n] = start;
      n++;
      start = buf + i + 1;
    } else {
      CHECK_MSG(c >= 0x20 && c != 0x7f, "control byte 0x%02x at %zu", c, i);
      CHECK_MSG(!(c == 0xc2 && i + 1 < len &&
                  (unsigned char)buf[i + 1] >= 0x80 &&
                  (unsigned char)buf[i + 1] <= 0x9f),
                "C1 control at %zu", i);
    }
  }
  CHECK_MSG(start == buf + len, "output does not end with a newline");
  return n;
}

static void test_text(void) {
  size_t len = 0;
  char *buf = write_records(CEB_LOGFMT_TEXT, &len);
  char *lines[NCASES + 1];
  CHECK_INT(lines_of(buf, len, lines, NCASES + 1), NCASES + 1);
  for (size_t i = 0; i < NCASES; i++) {
    char want[512];
    const char *e = cases[i].escaped;
    int q = strchr(e, ' ') != NULL;
    snprintf(want, sizeof want, " warn  [%s] event=%s%s%s route=%s%s%s", e,
             q ? "\"" : "", e, q ? "\"" : "", q ? "\"" : "", e, q ? "\"" : "");
    CHECK_MSG(strstr(lines[i], want) != NULL, "line %zu: %s", i, lines[i]);
    char tail[256];
    snprintf(tail, sizeof tail, " event %s refused", e);
    size_t ln = strlen(lines[i]), tn = strlen(tail);
    CHECK_MSG(ln >= tn && strcmp(lines[i] + ln - tn, tail) == 0, "line %zu: %s",
              i, lines[i]);
  }
  free(buf);
}

static void test_json(void) {
  size_t len = 0;
  char *buf = write_records(CEB_LOGFMT_JSON, &len);
  char *lines[NCASES + 1];
  CHECK_INT(lines_of(buf, len, lines, NCASES + 1), NCASES + 1);
  for (size_t i = 0; i < NCASES; i++) {
    json_error_t err;
    json_t *o = json_loads(lines[i], 0, &err);
    CHECK_MSG(o != NULL, "line %zu is not JSON (%s): %s", i, err.text,
              lines[i]);
    if (!o) continue;
    const char *e = cases[i].escaped;
    CHECK_STR(json_string_value(json_object_get(o, "component")), e);
    CHECK_STR(json_string_value(json_object_get(o, "event_id")), e);
    CHECK_STR(json_string_value(json_object_get(o, "route")), e);
    CHECK_STR(json_string_value(json_object_get(o, "client")), e);
    char want[256];
    snprintf(want, sizeof want, "event %s refused", e);
    CHECK_STR(json_string_value(json_object_get(o, "msg")), want);
    json_decref(o);
  }
  free(buf);
}

int main(void) {
  test_escape();
  test_text();
  test_json();
  return ceb_test_done("unit_log_escape");
}
