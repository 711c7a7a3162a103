/* Message traits: 2.x merge-patches traits over the message (the trait
 * wins); 3.0 never lets a trait override the message's own field. Also the
 * loaded contract: names, types, payload pointer, a payload check. */
#include <ceb/codec.h>
#include <string.h>

#include "ceb_test.h"
#include "contracts/ceb_contract.h"

static const char *doc_v2 =
    "{\"asyncapi\":\"2.6.0\",\"info\":{\"title\":\"t\",\"version\":\"1.2.0\"},"
    "\"defaultContentType\":\"application/json\","
    "\"channels\":{\"enrol\":{\"publish\":{\"message\":{\"oneOf\":["
    "{\"$ref\":\"#/components/messages/enrolled\"},"
    "{\"messageId\":\"withdrawn\",\"payload\":{\"type\":\"object\","
    "\"properties\":{\"type\":{\"const\":\"nl.duo.withdrawn\"}}}}]}}}},"
    "\"components\":{\"messages\":{\"enrolled\":{"
    "\"contentType\":\"text/plain\",\"title\":\"own\","
    "\"traits\":[{\"$ref\":\"#/components/messageTraits/common\"}],"
    "\"payload\":{\"$ref\":\"#/components/schemas/Enrolment\"}}},"
    "\"messageTraits\":{\"common\":{\"contentType\":\"application/json\","
    "\"headers\":{\"type\":\"object\",\"properties\":{\"ce_type\":"
    "{\"const\":\"nl.duo.enrolled\"}}}}},"
    "\"schemas\":{\"Enrolment\":{\"type\":\"object\",\"required\":"
    "[\"student\"],\"properties\":{\"student\":{\"type\":\"object\","
    "\"properties\":{\"birthdate\":{\"type\":\"string\",\"format\":"
    "\"date\"}}}}}}}}";

static int check_event(const ceb_contract *c, const char *json,
                       ceb_violations *v) {
  ceb_event *ev = NULL;
  ceb_error e;
  CHECK_INT(ceb_json_decode(json, strlen(json), &ev, &e), CEB_OK);
  if (!ev) return -100;
  memset(v, 0, sizeof *v);
  int rc = ceb_contract_check(c, ev, v);
  ceb_event_unref(ev);
  return rc;
}

int main(void) {
  /* The merge rules on their own. */
  json_t *msg = json_pack("{s:s,s:s,s:{s:s}}", "contentType", "text/plain",
                          "title", "own", "headers", "a", "msg");
  json_t *t1 =
      json_pack("{s:s,s:s,s:{s:s,s:s}}", "contentType", "application/json",
                "summary", "from trait", "headers", "a", "trait", "b", "trait");
  json_t *t2 = json_pack("{s:s}", "summary", "second trait");
  json_t *traits[] = {t1, t2};
  json_t *m2 = ceb_contract_apply_traits(2, msg, traits, 2);
  json_t *m3 = ceb_contract_apply_traits(3, msg, traits, 2);
  CHECK_STR(json_string_value(json_object_get(m2, "contentType")),
            "application/json");
  CHECK_STR(json_string_value(json_object_get(m3, "contentType")),
            "text/plain");
  CHECK_STR(json_string_value(json_object_get(m2, "summary")), "second trait");
  CHECK_STR(json_string_value(json_object_get(m3, "summary")), "second trait");
  /* Objects merge deeply either way; the winner differs per version. */
  CHECK_STR(
      json_string_value(json_object_get(json_object_get(m2, "headers"), "a")),
      "trait");
  CHECK_STR(
      json_string_value(json_object_get(json_object_get(m3, "headers"), "a")),
      "msg");
  CHECK_STR(
      json_string_value(json_object_get(json_object_get(m3, "headers"), "b")),
      "trait");
  CHECK_STR(json_string_value(json_object_get(m2, "title")), "own");
  json_decref(m2);
  json_decref(m3);
  json_decref(msg);
  json_decref(t1);
  json_decref(t2);

  /* Through a whole 2.6 document. */
  ceb_contract *c = NULL;
  char err[256] = "";
  ceb_contract_opts o = {.compile = 1};
  CHECK_INT(
      ceb_contract_load("duo", doc_v2, strlen(doc_v2), &o, &c, err, sizeof err),
      CEB_OK);
  if (!c) return ceb_test_done("unit_contracts_traits");
  CHECK_STR(c->version, "1.2.0");
  CHECK_INT(c->nmsgs, 2);
  const ceb_contract_msg *en = ceb_contract_find_name(c, "enrolled");
  const ceb_contract_msg *wd = ceb_contract_find_name(c, "withdrawn");
  CHECK(en && wd);
  if (en && wd) {
    CHECK_STR(en->content_type, "application/json"); /* the trait won */
    CHECK_STR(en->ce_type, "nl.duo.enrolled");       /* from the headers */
    CHECK_STR(en->channel, "enrol");
    CHECK_STR(en->operation, "publish");
    CHECK_STR(en->payload_pointer, "/components/messages/enrolled/payload");
    CHECK(!en->envelope);
    CHECK_STR(wd->ce_type, "nl.duo.withdrawn"); /* payload const */
    CHECK(wd->envelope);
    CHECK_STR(wd->content_type, "application/json"); /* document default */
  }
  ceb_violations v;
  CHECK_INT(check_event(c,
                        "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":"
                        "\"urn:x\",\"type\":\"nl.duo.enrolled\","
                        "\"datacontenttype\":\"application/json\","
                        "\"data\":{\"student\":{\"birthdate\":"
                        "\"2001-02-03\"}}}",
                        &v),
            CEB_OK);
  CHECK_INT(check_event(c,
                        "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":"
                        "\"urn:x\",\"type\":\"nl.duo.enrolled\","
                        "\"datacontenttype\":\"application/json\","
                        "\"data\":{\"student\":{\"birthdate\":"
                        "\"3 feb\"}}}",
                        &v),
            CEB_EVALIDATION);
  CHECK_STR(v.items[0].code, "contract.payload");
  CHECK_MSG(strstr(v.items[0].message, "/student/birthdate") &&
                strstr(v.items[0].message, "date"),
            "message: %s", v.items[0].message);
  CHECK_INT(check_event(c,
                        "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":"
                        "\"urn:x\",\"type\":\"nl.duo.other\"}",
                        &v),
            CEB_EVALIDATION);
  CHECK_STR(v.items[0].code, "contract.type_unknown");
  CHECK_INT(check_event(c,
                        "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":"
                        "\"urn:x\",\"type\":\"nl.duo.enrolled\","
                        "\"dataschema\":\"https://r.example/duo/2.0.0\","
                        "\"data\":{\"student\":{}}}",
                        &v),
            CEB_EVALIDATION);
  CHECK_STR(v.items[0].code, "contract.dataschema");
  CHECK_INT(check_event(c,
                        "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":"
                        "\"urn:x\",\"type\":\"nl.duo.enrolled\","
                        "\"dataschema\":\"https://r.example/duo/1.1.0\","
                        "\"data\":{\"student\":{}}}",
                        &v),
            CEB_OK);
  /* Structured: the payload describes the whole event. */
  CHECK_INT(check_event(c,
                        "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":"
                        "\"urn:x\",\"type\":\"nl.duo.withdrawn\"}",
                        &v),
            CEB_OK);
  ceb_contract_free(c);

  /* The 3.0 rule through a document: the message's contentType stays. */
  const char *doc_v3 =
      "{\"asyncapi\":\"3.0.0\",\"info\":{\"title\":\"t\",\"version\":\"2.0.0\"}"
      ","
      "\"channels\":{\"c\":{\"address\":\"a/b\",\"messages\":{\"m\":"
      "{\"$ref\":\"#/components/messages/m\"}}}},"
      "\"operations\":{\"send\":{\"action\":\"send\",\"channel\":{\"$ref\":"
      "\"#/channels/c\"},\"messages\":[{\"$ref\":\"#/channels/c/messages/"
      "m\"}]}},"
      "\"components\":{\"messages\":{\"m\":{\"contentType\":\"text/plain\","
      "\"traits\":[{\"contentType\":\"application/json\",\"payload\":"
      "{\"type\":\"string\"}}]}}}}";
  json_t *types = json_pack("{s:s}", "m", "nl.example.m");
  ceb_contract_opts o3 = {.types = types, .compile = 1};
  CHECK_INT(
      ceb_contract_load("x", doc_v3, strlen(doc_v3), &o3, &c, err, sizeof err),
      CEB_OK);
  if (c) {
    CHECK_INT(c->nmsgs, 1);
    CHECK_STR(c->msgs[0].content_type, "text/plain");
    CHECK_STR(c->msgs[0].ce_type, "nl.example.m"); /* configured mapping */
    CHECK_STR(c->msgs[0].channel, "a/b");
    CHECK_STR(c->msgs[0].operation, "send");
    /* The payload only the trait has: compiled from the trait. */
    CHECK_STR(c->msgs[0].payload_pointer,
              "/components/messages/m/traits/0/payload");
    CHECK(c->msgs[0].payload != NULL);
    ceb_contract_free(c);
  }
  json_decref(types);
  return ceb_test_done("unit_contracts_traits");
}
