/* Validation: CloudEvents rules, NL GOV profile levels, codes, limits. */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

static ceb_event *minimal(void) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", "1");
  ceb_event_set(ev, "source", "urn:nld:oin:00000001823288444000:systeem:x");
  ceb_event_set(ev, "type", "nl.overheid.zaken.zaakstatus-gewijzigd");
  ceb_event_set(ev, "time", "2021-12-10T17:31:00Z");
  return ev;
}

static const ceb_violation *find(const ceb_violations *v, const char *code) {
  for (size_t i = 0; i < v->count; i++)
    if (strcmp(v->items[i].code, code) == 0) return &v->items[i];
  return NULL;
}

/* Sets name=value on a minimal event and expects exactly one violation
 * `code` with `sev` at profile level `level`. */
static void expect_one(const char *name, const char *value, ceb_attr_type t,
                       ceb_profile_level level, const char *code,
                       ceb_severity sev) {
  ceb_event *ev = minimal();
  CHECK_INT(ceb_event_set_typed(ev, name, t, value), CEB_OK);
  ceb_validate_opts o = {sizeof o, level, 0};
  ceb_violations v;
  size_t errors = ceb_event_validate(ev, &o, &v);
  CHECK_MSG(v.count == 1, "%s=%s: %zu violations (first %s)", name,
            value ? value : "(unset)", v.count,
            v.count ? v.items[0].code : "-");
  const ceb_violation *x = find(&v, code);
  CHECK_MSG(x != NULL, "%s=%s: no %s", name, value ? value : "(unset)", code);
  if (x) {
    CHECK_INT(x->severity, sev);
    CHECK(x->message[0] != '\0');
    CHECK(strcmp(x->code, code) == 0);
  }
  CHECK_INT(errors, sev == CEB_SEV_ERROR ? 1 : 0);
  CHECK_INT(v.errors, errors);
  ceb_event_unref(ev);
}

static void test_cloudevents_rules(void) {
  ceb_violations v;
  ceb_event *ev = minimal();
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 0);
  CHECK_INT(v.count, 0);
  ceb_event_unref(ev);

  const ceb_attr_type S = CEB_ATTR_STRING;
  const ceb_profile_level OFF = CEB_PROFILE_OFF;
  const ceb_severity E = CEB_SEV_ERROR;
  expect_one("id", NULL, S, OFF, "ce.id.missing", E);
  expect_one("id", "", S, OFF, "ce.id.empty", E);
  expect_one("specversion", NULL, S, OFF, "ce.specversion.missing", E);
  expect_one("specversion", "0.3", S, OFF, "ce.specversion.unsupported", E);
  expect_one("source", NULL, S, OFF, "ce.source.missing", E);
  expect_one("source", "", S, OFF, "ce.source.empty", E);
  expect_one("source", "a b", S, OFF, "ce.source.invalid", E);
  expect_one("type", NULL, S, OFF, "ce.type.missing", E);
  expect_one("type", "", S, OFF, "ce.type.empty", E);
  expect_one("datacontenttype", "xyz", S, OFF, "ce.datacontenttype.invalid", E);
  expect_one("datacontenttype", "", S, OFF, "ce.datacontenttype.invalid", E);
  expect_one("dataschema", "", S, OFF, "ce.dataschema.invalid", E);
  expect_one("dataschema", "/relative", S, OFF, "ce.dataschema.invalid", E);
  expect_one("subject", "", S, OFF, "ce.subject.empty", E);
  expect_one("time", "2018-04-05T18:31Z", S, OFF, "ce.time.invalid", E);
  expect_one("MyExtension", "x", S, OFF, "ce.attr.name", E);
  expect_one("my.ext", "x", S, OFF, "ce.attr.name", E);
  expect_one("data", "x", S, OFF, "ce.attr.reserved", E);
  expect_one("e", "yes", CEB_ATTR_BOOLEAN, OFF, "ce.attr.boolean", E);
  expect_one("e", "2147483648", CEB_ATTR_INTEGER, OFF, "ce.attr.integer", E);
  expect_one("e", "1.5", CEB_ATTR_INTEGER, OFF, "ce.attr.integer", E);
  expect_one("e", "TWE", CEB_ATTR_BINARY, OFF, "ce.attr.binary", E);
  expect_one("e", "/rel", CEB_ATTR_URI, OFF, "ce.attr.uri", E);
  expect_one("e", "a b", CEB_ATTR_URI_REF, OFF, "ce.attr.uri_ref", E);
  expect_one("e", "noon", CEB_ATTR_TIMESTAMP, OFF, "ce.attr.timestamp", E);

  /* valid typed extensions */
  ev = minimal();
  ceb_event_set_typed(ev, "i", CEB_ATTR_INTEGER, "-2147483648");
  ceb_event_set_typed(ev, "b", CEB_ATTR_BOOLEAN, "false");
  ceb_event_set_typed(ev, "x", CEB_ATTR_BINARY, "TWE=");
  ceb_event_set_typed(ev, "u", CEB_ATTR_URI, "https://a.example");
  ceb_event_set_typed(ev, "r", CEB_ATTR_URI_REF, "//authority/path");
  ceb_event_set_typed(ev, "t", CEB_ATTR_TIMESTAMP, "2023-03-31T15:12:00Z");
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 0);
  /* data content checks */
  ceb_event_set_data(ev, "{x", 2, CEB_DATA_JSON);
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 1);
  CHECK(find(&v, "ce.data.json") != NULL);
  ceb_event_set_data(ev, "\xc3(", 2, CEB_DATA_TEXT);
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 1);
  CHECK(find(&v, "ce.data.text") != NULL);
  ceb_event_unref(ev);

  /* many violations at once: every required one is reported */
  ev = ceb_event_new();
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 4);
  CHECK(find(&v, "ce.id.missing") && find(&v, "ce.source.missing") &&
        find(&v, "ce.type.missing") && find(&v, "ce.specversion.missing"));
  ceb_event_unref(ev);
  CHECK_INT(ceb_event_validate(NULL, NULL, &v), 1);
}

static void test_size_and_truncation(void) {
  ceb_event *ev = minimal();
  char *blob = calloc(70000, 1);
  ceb_event_set_data(ev, blob, 70000, CEB_DATA_BINARY);
  ceb_violations v;
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 1);
  CHECK(find(&v, "event.too_large") != NULL);
  ceb_validate_opts o = {sizeof o, CEB_PROFILE_OFF, 100000};
  CHECK_INT(ceb_event_validate(ev, &o, &v), 0);
  o.max_size = 10;
  ceb_event_set_data(ev, NULL, 0, CEB_DATA_NONE);
  CHECK_INT(ceb_event_validate(ev, &o, &v), 1);
  free(blob);
  ceb_event_unref(ev);

  ev = minimal();
  char name[8];
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "Bad%d", i);
    ceb_event_set(ev, name, "x");
  }
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 40);
  CHECK_INT(v.count, CEB_MAX_VIOLATIONS);
  CHECK(v.truncated);
  CHECK_INT(v.errors, 40);
  ceb_event_unref(ev);
}

static void test_nlgov(void) {
  const ceb_attr_type S = CEB_ATTR_STRING;
  const ceb_profile_level EN = CEB_PROFILE_ENFORCE, WA = CEB_PROFILE_WARN;
  const ceb_severity E = CEB_SEV_ERROR, W = CEB_SEV_WARNING;
  expect_one("source", "urn:nld:oin:123:systeem:x", S, EN, "nlgov.source.urn",
             E);
  expect_one("source", "urn:nld:oin:123:systeem:x", S, WA, "nlgov.source.urn",
             W);
  expect_one("source", "urn:nld:", S, EN, "nlgov.source.urn", E);
  expect_one("source", "urn:nld:oin:00000001823288444000:", S, EN,
             "nlgov.source.urn", E);
  expect_one("source", "urn:nld:kvknr:1234.x", S, EN, "nlgov.source.urn", E);
  /* not an nld URN: the profile's SHOULD, a warning even when enforced */
  expect_one("source", "urn:isbn:0451450523", S, EN, "nlgov.source.nld_urn", W);
  expect_one("source", "/relative/source", S, EN, "nlgov.source.nld_urn", W);
  expect_one("type", "zaakstatus-gewijzigd", S, EN, "nlgov.type.reverse_dns",
             E);
  expect_one("type", "nl..x", S, EN, "nlgov.type.reverse_dns", E);
  expect_one("type", "n1.x", S, WA, "nlgov.type.reverse_dns", W);
  expect_one("type", "nl.brp.v1.verhuisd.v2", S, EN, "nlgov.type.version", E);
  expect_one("abcdefghijklmnopqrstu", "x", S, EN, "nlgov.attr.name_length", E);
  expect_one("datacontenttype", "text/xml", S, EN, "nlgov.datacontenttype.json",
             W);
  expect_one("time", NULL, S, EN, "nlgov.time.missing", W);
  expect_one("dataref", "a b", S, EN, "nlgov.dataref.invalid", E);
  expect_one("sequence", "", S, EN, "nlgov.sequence.empty", E);
  expect_one("sequencetype", "", S, EN, "nlgov.sequencetype.empty", E);
  expect_one("sequencetype", "integer", S, EN, "nlgov.sequence.missing", E);

  ceb_event *ev = minimal();
  ceb_violations v;
  ceb_validate_opts o = {sizeof o, CEB_PROFILE_ENFORCE, 0};
  ceb_event_set(ev, "sequencetype", "Integer");
  ceb_event_set(ev, "sequence", "12a");
  CHECK_INT(ceb_event_validate(ev, &o, &v), 1);
  CHECK(find(&v, "nlgov.sequence.integer") != NULL);
  ceb_event_set(ev, "sequence", "1234");
  CHECK_INT(ceb_event_validate(ev, &o, &v), 0);
  CHECK_INT(v.count, 0);
  ceb_event_set(ev, "sequencetype", "lexical");
  CHECK_INT(ceb_event_validate(ev, &o, &v), 0);
  CHECK_INT(v.warnings, 1);
  CHECK(find(&v, "nlgov.sequencetype.unknown") != NULL);
  /* profile off: profile rules are silent */
  ceb_event_set(ev, "type", "nodots");
  ceb_event_set(ev, "time", NULL);
  o.nlgov = CEB_PROFILE_OFF;
  CHECK_INT(ceb_event_validate(ev, &o, &v), 0);
  CHECK_INT(v.count, 0);
  /* accepted source forms */
  o.nlgov = CEB_PROFILE_ENFORCE;
  ceb_event_set(ev, "type", "com.example.object.deleted.v2");
  CHECK_INT(ceb_event_validate(ev, &o, &v), 0);
  ceb_event_set(ev, "type", "com.github.pull_request.opened");
  static const char *const sources[] = {
      "urn:nld:oin:00000001823288444000:systeem:BRP-component",
      "urn:nld:oin:00000001823288444000",
      "urn:nld:kvknr:09220932.burgerzakensysteem",
      "urn:nld:gemeente-nijmegen.burgerzakensysteem",
      "urn:nld:gemeente-Bergen%20%28L%29.burgerzakensysteem",
      "https://github.com/cloudevents/spec/pull"};
  for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
    ceb_event_set(ev, "source", sources[i]);
    CHECK_MSG(ceb_event_validate(ev, &o, &v) == 0, "%s: %s", sources[i],
              v.count ? v.items[0].code : "-");
  }
  ceb_event_unref(ev);
}

/* The CloudEvents rules run once per event content: a validation that found
 * no CloudEvents error marks the event (ceb_event_checked), a later one with
 * the profile still reports the profile's rules (the name length among the
 * attribute rules too), and any change drops the mark. */
static void test_checked_once(void) {
  ceb_event *ev = minimal();
  CHECK(!ceb_event_checked(ev));
  ceb_event_set(ev, "abcdefghijklmnopqrstuvwxyz", "long name");
  ceb_event_set(ev, "source", "urn:nld:oin:12:x");
  ceb_validate_opts off = {sizeof off, CEB_PROFILE_OFF, 0};
  ceb_validate_opts enforce = {sizeof enforce, CEB_PROFILE_ENFORCE, 0};
  ceb_violations v;
  CHECK_INT(ceb_event_validate(ev, &off, &v), 0);
  CHECK(ceb_event_checked(ev));
  /* the host's validation after the plugin's: same answer as unmarked */
  CHECK_INT(ceb_event_validate(ev, &enforce, &v), 2);
  CHECK(find(&v, "nlgov.attr.name_length") != NULL);
  CHECK(find(&v, "nlgov.source.urn") != NULL);
  ceb_event *fresh = ceb_event_clone(ev);
  CHECK(!ceb_event_checked(fresh)); /* a copy is checked again */
  ceb_violations w;
  CHECK_INT(ceb_event_validate(fresh, &enforce, &w), 2);
  CHECK_INT(w.count, v.count);
  CHECK_INT(w.warnings, v.warnings);
  ceb_event_unref(fresh);
  /* the size limit is not part of the mark */
  ceb_validate_opts tiny = {sizeof tiny, CEB_PROFILE_OFF, 16};
  CHECK_INT(ceb_event_validate(ev, &tiny, &v), 1);
  CHECK_STR(v.items[0].code, "event.too_large");
  CHECK(ceb_event_checked(ev));
  /* a change drops the mark: the new content is checked again */
  CHECK_INT(ceb_event_set(ev, "id", NULL), CEB_OK);
  CHECK(!ceb_event_checked(ev));
  CHECK_INT(ceb_event_validate(ev, &off, &v), 1);
  CHECK_STR(v.items[0].code, "ce.id.missing");
  CHECK(!ceb_event_checked(ev));
  ceb_event_set(ev, "id", "2");
  CHECK_INT(ceb_event_validate(ev, &off, &v), 0);
  CHECK(ceb_event_checked(ev));
  CHECK_INT(ceb_event_set_data(ev, "{", 1, CEB_DATA_JSON), CEB_OK);
  CHECK(!ceb_event_checked(ev));
  CHECK_INT(ceb_event_validate(ev, &off, &v), 1);
  ceb_event_unref(ev);
}

/* Validates a minimal event with `value` in subject and returns the
 * violation `code` on it (NULL when the value is accepted; any other
 * violation fails the check). */
static const ceb_violation *string_rule(const char *value, ceb_violations *v) {
  ceb_event *ev = minimal();
  CHECK_INT(ceb_event_set(ev, "subject", value), CEB_OK);
  size_t errors = ceb_event_validate(ev, NULL, v);
  ceb_event_unref(ev);
  CHECK_MSG(errors == v->count && errors <= 1, "%zu errors, %zu items", errors,
            v->count);
  return v->count ? &v->items[0] : NULL;
}

/* Expects value (a subject) refused with code and a message naming the
 * code point as `uplus` (U+XXXX), none of its bytes raw. */
static void expect_refused(const char *value, const char *code,
                           const char *uplus) {
  ceb_violations v;
  const ceb_violation *x = string_rule(value, &v);
  CHECK_MSG(x != NULL, "%s: accepted", uplus);
  if (!x) return;
  CHECK_STR(x->code, code);
  CHECK_STR(x->attribute, "subject");
  CHECK_INT(x->severity, CEB_SEV_ERROR);
  if (uplus)
    CHECK_MSG(strstr(x->message, uplus) != NULL, "'%s' does not name %s",
              x->message, uplus);
  for (const unsigned char *p = (const unsigned char *)x->message; *p; p++)
    CHECK_MSG(*p >= 0x20 && *p < 0x7F, "raw byte 0x%02X in the message", *p);
}

static void expect_taken(const char *value, const char *what) {
  ceb_violations v;
  const ceb_violation *x = string_rule(value, &v);
  CHECK_MSG(x == NULL, "%s refused: %s", what, x ? x->message : "");
}

/* CloudEvents 1.0.2 "String": no U+0000-U+001F, U+007F-U+009F, surrogates,
 * U+FDD0-U+FDEF, U+xFFFE or U+xFFFF; each range's edges, in UTF-8. */
static void test_string_rule(void) {
  expect_refused("a\x1f"
                 "b",
                 "ce.attr.string", "U+001F");
  expect_refused("\t", "ce.attr.string", "U+0009");
  expect_refused("x\x1b[31m", "ce.attr.string", "U+001B");
  expect_taken("a b ~", "U+0020, U+007E");
  expect_refused("a\x7f", "ce.attr.string", "U+007F");
  expect_refused("\xc2\x80", "ce.attr.string", "U+0080");
  expect_refused("next\xc2\x85line", "ce.attr.string", "U+0085");
  expect_refused("\xc2\x9f", "ce.attr.string", "U+009F");
  expect_taken("\xc2\xa0", "U+00A0");
  expect_taken("\xed\x9f\xbf", "U+D7FF");
  expect_refused("\xed\xa0\x80", "ce.attr.string", "U+D800"); /* CESU-8 */
  expect_refused("\xed\xbf\xbf", "ce.attr.string", "U+DFFF");
  expect_taken("\xee\x80\x80", "U+E000");
  expect_taken("\xef\xb7\x8f", "U+FDCF");
  expect_refused("\xef\xb7\x90", "ce.attr.string", "U+FDD0");
  expect_refused("\xef\xb7\xaf", "ce.attr.string", "U+FDEF");
  expect_taken("\xef\xb7\xb0", "U+FDF0");
  expect_taken("\xef\xbf\xbd", "U+FFFD");
  expect_refused("\xef\xbf\xbe", "ce.attr.string", "U+FFFE");
  expect_refused("\xef\xbf\xbf", "ce.attr.string", "U+FFFF");
  expect_taken("\xf0\x90\x80\x80", "U+10000");
  expect_refused("\xf0\x9f\xbf\xbe", "ce.attr.string", "U+1FFFE");
  expect_refused("\xf0\x9f\xbf\xbf", "ce.attr.string", "U+1FFFF");
  expect_refused("\xf4\x8f\xbf\xbf", "ce.attr.string", "U+10FFFF");
  expect_taken("\xf4\x8f\xbf\xbd", "U+10FFFD");
  expect_taken("caf\xc3\xa9 \xf0\x9f\x98\x80", "a 4-byte emoji");
  /* the first offending character is the one named */
  expect_refused("ok \xef\xbf\xbf then \t", "ce.attr.string", "U+FFFF");
  /* not UTF-8 at all: its own code, the byte in hex */
  expect_refused("\xff", "ce.attr.utf8", "0xFF");
  expect_refused("a\xc3", "ce.attr.utf8", "offset 1");  /* cut short */
  expect_refused("\xc0\xaf", "ce.attr.utf8", "0xC0");   /* overlong '/' */
  expect_refused("\xe0\x80\xaf", "ce.attr.utf8", NULL); /* overlong */
  expect_refused("\xf0\x80\x80\xaf", "ce.attr.utf8", NULL);
  expect_refused("\xf4\x90\x80\x80", "ce.attr.utf8", NULL); /* > 10FFFF */
  expect_refused("\x80", "ce.attr.utf8", NULL);

  /* every attribute, context or extension, whatever its type */
  static const struct {
    const char *name;
    ceb_attr_type t;
  } attrs[] = {{"id", CEB_ATTR_STRING},      {"source", CEB_ATTR_URI_REF},
               {"type", CEB_ATTR_STRING},    {"datacontenttype", 0},
               {"dataschema", CEB_ATTR_URI}, {"time", CEB_ATTR_TIMESTAMP},
               {"ext", CEB_ATTR_STRING},     {"flag", CEB_ATTR_BOOLEAN},
               {"num", CEB_ATTR_INTEGER},    {"bin", CEB_ATTR_BINARY},
               {"uri", CEB_ATTR_URI},        {"ref", CEB_ATTR_URI_REF},
               {"ts", CEB_ATTR_TIMESTAMP},   {"specversion", 0}};
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    ceb_event *ev = minimal();
    CHECK_INT(ceb_event_set_typed(ev, attrs[i].name, attrs[i].t, "1.0\x1b"),
              CEB_OK);
    ceb_violations v;
    CHECK(ceb_event_validate(ev, NULL, &v) >= 1);
    const ceb_violation *x = find(&v, "ce.attr.string");
    CHECK_MSG(x != NULL, "%s: no ce.attr.string", attrs[i].name);
    if (x) CHECK_STR(x->attribute, attrs[i].name);
    CHECK(!ceb_event_checked(ev));
    ceb_event_unref(ev);
  }
  /* a hostile name is not repeated in the message */
  ceb_event *ev = minimal();
  CHECK_INT(ceb_event_set(ev, "x\x1b", "\x1b"), CEB_OK);
  ceb_violations v;
  CHECK_INT(ceb_event_validate(ev, NULL, &v), 2);
  const ceb_violation *x = find(&v, "ce.attr.string");
  CHECK(x != NULL && strchr(x->message, 0x1b) == NULL);
  ceb_event_unref(ev);
}

int main(void) {
  test_string_rule();
  test_checked_once();
  test_cloudevents_rules();
  test_size_and_truncation();
  test_nlgov();
  return ceb_test_done("unit_event_validate");
}
