/* plugins/common/input_doc.c: the renderings every input document shares
 * (JSON, text or base64 payloads; header maps and lists; compact dump). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ceb/codec.h>
#include <ceb/status.h>

#include "ceb_test.h"
#include "input_doc.h"

/* doc dumped compact equals want, byte for byte. */
static void check_dump(json_t *doc, const char *want, int line) {
  char *out = NULL;
  size_t len = 0;
  CHECK_INT(idoc_dump(doc, &out, &len), CEB_OK);
  CHECK_MSG(out && strcmp(out, want) == 0 && len == strlen(want),
            "line %d: got %s, want %s", line, out ? out : "(null)", want);
  free(out);
}

static void payload_case(const void *bytes, size_t len, const char *ct,
                         const char *want, int line) {
  json_t *doc = json_object();
  CHECK_INT(idoc_set_payload(doc, "body", bytes, len, ct), CEB_OK);
  check_dump(doc, want, line);
  json_decref(doc);
}

static void test_payloads(void) {
  const char *obj = "{ \"a\" : [1, 2.5, \"x\"] }";
  /* a JSON type or none: parsed (spacing is not kept: it is a value) */
  payload_case(obj, strlen(obj), "application/json; charset=utf-8",
               "{\"body\":{\"a\":[1,2.5,\"x\"]},\"body_encoding\":\"json\"}",
               __LINE__);
  payload_case(obj, strlen(obj), NULL,
               "{\"body\":{\"a\":[1,2.5,\"x\"]},\"body_encoding\":\"json\"}",
               __LINE__);
  payload_case(obj, strlen(obj), "application/vnd.x+json",
               "{\"body\":{\"a\":[1,2.5,\"x\"]},\"body_encoding\":\"json\"}",
               __LINE__);
  /* scalars are JSON texts too */
  payload_case("42", 2, NULL, "{\"body\":42,\"body_encoding\":\"json\"}",
               __LINE__);
  payload_case("\"s\\u0000t\"", 10, "application/json",
               "{\"body\":\"s\\u0000t\",\"body_encoding\":\"json\"}", __LINE__);
  /* another type: never parsed, even when it would parse */
  payload_case(obj, strlen(obj), "text/plain",
               "{\"body\":\"{ \\\"a\\\" : [1, 2.5, \\\"x\\\"] }\","
               "\"body_encoding\":\"text\"}",
               __LINE__);
  /* a JSON type that does not parse: the text */
  payload_case("{oops", 5, "application/json",
               "{\"body\":\"{oops\",\"body_encoding\":\"text\"}", __LINE__);
  payload_case("", 0, NULL, "{\"body\":\"\",\"body_encoding\":\"text\"}",
               __LINE__);
  /* UTF-8 text with a NUL stays text */
  payload_case("caf\xc3\xa9\0!", 7, "text/plain",
               "{\"body\":\"caf\xc3\xa9\\u0000!\",\"body_encoding\":\"text\"}",
               __LINE__);
  /* not UTF-8: base64 */
  payload_case("\xff\xfe\x00\x01", 4, "application/octet-stream",
               "{\"body\":\"//4AAQ==\",\"body_encoding\":\"base64\"}",
               __LINE__);
  payload_case("\xc3(", 2, NULL,
               "{\"body\":\"wyg=\",\"body_encoding\":\"base64\"}", __LINE__);
  /* no bytes at all (a Kafka tombstone) */
  payload_case(NULL, 0, NULL, "{\"body\":null,\"body_encoding\":null}",
               __LINE__);
}

static void test_pairs(void) {
  json_t *doc = json_object(), *map = json_object(), *list = json_array();
  CHECK_INT(idoc_add_pair(map, list, "id", "a-1", 3), CEB_OK);
  CHECK_INT(idoc_add_pair(map, list, "bin", "\x80\x81", 2), CEB_OK);
  CHECK_INT(idoc_add_pair(map, list, "id", "a-2", 3), CEB_OK);
  CHECK_INT(idoc_add_pair(map, list, "nil", NULL, 0), CEB_OK);
  CHECK_INT(idoc_add_pair(map, list, "\xff", "x", 1), CEB_OK);
  json_object_set_new(doc, "map", map);
  json_object_set_new(doc, "list", list);
  check_dump(doc,
             "{\"map\":{\"id\":\"a-2\",\"bin\":\"gIE=\",\"nil\":null},"
             "\"list\":[{\"name\":\"id\",\"value\":\"a-1\"},"
             "{\"name\":\"bin\",\"value\":\"gIE=\",\"encoding\":\"base64\"},"
             "{\"name\":\"id\",\"value\":\"a-2\"},"
             "{\"name\":\"nil\",\"value\":null},"
             "{\"name\":\"/w==\",\"value\":\"x\","
             "\"name_encoding\":\"base64\"}]}",
             __LINE__);
  json_decref(doc);

  doc = json_object();
  CHECK_INT(idoc_set_str(doc, "a", "text"), CEB_OK);
  CHECK_INT(idoc_set_str(doc, "b", NULL), CEB_OK);
  CHECK_INT(idoc_set_str(doc, "c", "\xfe"), CEB_OK);
  check_dump(doc, "{\"a\":\"text\",\"b\":null,\"c\":\"/g==\"}", __LINE__);
  json_decref(doc);
}

/* The payload written last, as it came when it is JSON (spacing and number
 * spelling kept: no parse and second write); parsed when only jansson can
 * tell (duplicate names); as text when the type is not JSON. */
static void dump_case(const char *bytes, const char *ct, const char *want,
                      int line) {
  json_t *doc = json_object();
  json_object_set_new(doc, "topic", json_string("t"));
  char *out = NULL;
  size_t len = 0;
  CHECK_INT(idoc_dump_payload(doc, "value", bytes, bytes ? strlen(bytes) : 0,
                              ct, &out, &len),
            CEB_OK);
  CHECK_MSG(out && strcmp(out, want) == 0 && len == strlen(want),
            "line %d: got %s, want %s", line, out ? out : "(null)", want);
  json_t *back = out ? json_loads(out, 0, NULL) : NULL;
  CHECK_MSG(back != NULL, "line %d: not JSON", line);
  json_decref(back);
  free(out);
  json_decref(doc);
}

static void test_dump_payload(void) {
  dump_case("{ \"a\" : 1.50 }", NULL,
            "{\"topic\":\"t\",\"value\":{ \"a\" : 1.50 },"
            "\"value_encoding\":\"json\"}",
            __LINE__);
  dump_case("[1, 2]\n", "application/json",
            "{\"topic\":\"t\",\"value\":[1, 2]\n,"
            "\"value_encoding\":\"json\"}",
            __LINE__);
  dump_case("{\"a\":1,\"a\":2}", NULL,
            "{\"topic\":\"t\",\"value\":{\"a\":2},"
            "\"value_encoding\":\"json\"}",
            __LINE__);
  dump_case("{\"a\":1}", "text/plain",
            "{\"topic\":\"t\",\"value\":\"{\\\"a\\\":1}\","
            "\"value_encoding\":\"text\"}",
            __LINE__);
  dump_case(NULL, NULL,
            "{\"topic\":\"t\",\"value\":null,\"value_encoding\":null}",
            __LINE__);
  /* an empty document gets no leading comma */
  json_t *doc = json_object();
  char *out = NULL;
  size_t len = 0;
  CHECK_INT(idoc_dump_payload(doc, "body", "7", 1, NULL, &out, &len), CEB_OK);
  CHECK_STR(out, "{\"body\":7,\"body_encoding\":\"json\"}");
  free(out);
  json_decref(doc);
}

/* Hostile bytes: 3000 payloads (a fixed seed, so a failure repeats) of
 * random bytes, of JSON-looking text with random bytes spliced in, and of
 * valid JSON, each under a JSON, a text and no content type. Every
 * document must be one valid JSON object (jansson reads it), and its
 * payload must give back exactly the bytes: the JSON value equal to what
 * jansson makes of them, the text equal, the base64 decoding equal. */
static void test_hostile(void) {
  static const char *const seeds[] = {
      "{\"a\":[1,2,{\"b\":\"c\"}],\"n\":-1.5e3}",
      "\"str\\u00e9\"",
      "[true,false,null]",
      "12345678901234567890123",
      "{\"k\":\"\\ud800\"}",
      "  {\"x\" : \"\\\"\"}  "};
  static const char *const types[] = {"application/json", "text/plain", NULL};
  unsigned state = 12345;
  int bad = 0;
  for (int i = 0; i < 3000 && bad < 5; i++) {
    unsigned char buf[96];
    size_t len;
    state = state * 1103515245u + 12345u;
    int kind = (int)((state >> 16) % 3);
    if (kind == 0) { /* random bytes */
      len = (state >> 8) % sizeof buf;
      for (size_t k = 0; k < len; k++) {
        state = state * 1103515245u + 12345u;
        buf[k] = (unsigned char)(state >> 16);
      }
    } else { /* a JSON text, maybe with one byte changed */
      const char *sd = seeds[(state >> 8) % 6];
      len = strlen(sd);
      memcpy(buf, sd, len);
      if (kind == 2 && len) {
        state = state * 1103515245u + 12345u;
        buf[(state >> 8) % len] = (unsigned char)(state >> 16);
      }
    }
    for (size_t t = 0; t < 3; t++) {
      json_t *doc = json_object();
      char *out = NULL;
      size_t olen = 0;
      CHECK_INT(idoc_dump_payload(doc, "p", buf, len, types[t], &out, &olen),
                CEB_OK);
      json_t *back = out ? json_loadb(out, olen, JSON_ALLOW_NUL, NULL) : NULL;
      const char *enc = json_string_value(json_object_get(back, "p_encoding"));
      json_t *v = json_object_get(back, "p");
      int ok = back && enc;
      if (ok && !strcmp(enc, "json")) {
        json_t *want = json_loadb((const char *)buf, len,
                                  JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        ok = want && json_equal(want, v);
        json_decref(want);
      } else if (ok && !strcmp(enc, "text")) {
        ok = json_string_length(v) == len &&
             !memcmp(json_string_value(v), buf, len);
      } else if (ok && !strcmp(enc, "base64")) {
        unsigned char *dec = NULL;
        size_t dlen = 0;
        ok = ceb_base64_decode(json_string_value(v), json_string_length(v),
                               &dec, &dlen) == CEB_OK &&
             dlen == len && !memcmp(dec, buf, len);
        ceb_free(dec);
      } else {
        ok = 0;
      }
      if (!ok) bad++;
      CHECK_MSG(ok, "payload %d under %s: %s", i, types[t] ? types[t] : "-",
                out ? out : "(none)");
      json_decref(back);
      free(out);
      json_decref(doc);
    }
  }
}

int main(void) {
  test_hostile();
  test_dump_payload();
  test_payloads();
  test_pairs();
  return ceb_test_done("unit_input_doc");
}
