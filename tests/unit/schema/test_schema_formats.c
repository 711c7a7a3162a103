/* The formats the bridge relies on (CloudEvents "time" and "source",
 * AsyncAPI contract checks), asserted through the public API: valid and
 * invalid samples for each, including the edge cases that matter
 * (leap days and seconds, offsets, URN sources, IPv4-in-IPv6...). */
#include "ceb_test.h"
#include "schema/ceb_schema.h"

#include <string.h>

static const struct {
  const char *format, *value;
  int valid;
} cases[] = {
    {"date-time", "2024-02-29T12:00:00Z", 1},
    {"date-time", "2024-02-29t12:00:00.123456+01:00", 1},
    {"date-time", "1998-12-31T23:59:60Z", 1},
    {"date-time", "1998-12-31T15:59:60-08:00", 1},
    {"date-time", "1998-12-31T22:59:60Z", 0},
    {"date-time", "2023-02-29T12:00:00Z", 0},
    {"date-time", "2024-02-29 12:00:00Z", 0},
    {"date-time", "2024-02-29T12:00:00", 0},
    {"date-time", "2024-13-01T12:00:00Z", 0},
    {"date-time", "2024-02-29T24:00:00Z", 0},
    {"date", "2000-02-29", 1},
    {"date", "1900-02-29", 0},
    {"date", "2024-4-01", 0},
    {"time", "08:30:06+00:20", 1},
    {"time", "08:30:06", 0},
    {"time", "08:30:06+24:00", 0},
    {"uri", "https://example.nl/a/b?c=d#e", 1},
    {"uri", "urn:nld:oin:00000001823288444000:systeem:x", 1},
    {"uri", "mailto:a@example.nl", 1},
    {"uri", "http://[2001:db8::1]:8080/", 1},
    {"uri", "/relative/path", 0},
    {"uri", "http://exa mple.nl/", 0},
    {"uri", "http://example.nl/\xc3\xa9", 0},
    {"uri", "1http://x", 0},
    {"uri-reference", "/relative/path?x#frag", 1},
    {"uri-reference", "#frag", 1},
    {"uri-reference", "", 1},
    {"uri-reference", "a:b:c", 1},
    {"uri-reference", "\\\\server\\share", 0},
    {"uri-reference", "#frag#ment", 0},
    {"uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d16380", 1},
    {"uuid", "2EB8AA08-AA98-11EA-B4AA-73B441D16380", 1},
    {"uuid", "2eb8aa08aa9811eab4aa73b441d16380", 0},
    {"uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d1638", 0},
    {"email", "joe.bloggs@example.com", 1},
    {"email", "\"joe bloggs\"@example.com", 1},
    {"email", "joe@[127.0.0.1]", 1},
    {"email", "joe@[IPv6:::1]", 1},
    {"email", "joe..bloggs@example.com", 0},
    {"email", ".joe@example.com", 0},
    {"email", "joe@example..com", 0},
    {"email", "joe", 0},
    {"ipv4", "192.168.0.1", 1},
    {"ipv4", "255.255.255.255", 1},
    {"ipv4", "256.0.0.1", 0},
    {"ipv4", "087.10.0.1", 0},
    {"ipv4", "1.2.3", 0},
    {"ipv4", "1.2.3.4.5", 0},
    {"ipv6", "::1", 1},
    {"ipv6", "2001:db8::ff00:42:8329", 1},
    {"ipv6", "::ffff:192.168.0.1", 1},
    {"ipv6", "12345::", 0},
    {"ipv6", "1:2:3:4:5:6:7:8:9", 0},
    {"ipv6", "fe80::1%eth0", 0},
    {"hostname", "www.example.nl", 1},
    {"hostname", "-bad.example", 0},
    {"duration", "P1Y2M3DT4H5M6S", 1},
    {"duration", "PT", 0},
    {"regex", "^[a-z]+\\d$", 1},
    {"regex", "(?P<n>x)", 0},
};

int main(void) {
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    json_t *schema = json_pack("{ss}", "format", cases[i].format);
    json_t *inst = json_string(cases[i].value);
    ceb_schema_opts o = {.assert_formats = 1};
    ceb_schema *s = NULL;
    char err[128];
    CHECK_INT(ceb_schema_compile(schema, NULL, &o, &s, err, sizeof err), 0);
    if (s && inst) {
      int got = ceb_schema_validate(s, inst, NULL);
      CHECK_MSG(got == cases[i].valid, "format %s: \"%s\": got %d, want %d",
                cases[i].format, cases[i].value, got, cases[i].valid);
      /* annotation only unless asked */
      ceb_schema *a = NULL;
      CHECK_INT(ceb_schema_compile(schema, NULL, NULL, &a, err, sizeof err), 0);
      if (a) CHECK_INT(ceb_schema_validate(a, inst, NULL), 1);
      ceb_schema_free(a);
    }
    ceb_schema_free(s);
    json_decref(schema);
    json_decref(inst);
  }
  return ceb_test_done("schema_formats");
}
