/* One AsyncAPI contract version as the bridge checks it: the bundled,
 * self-contained JSON document from the register, its messages (AsyncAPI
 * 2.x and 3.0; traits merged per the version's rules), the CloudEvents type
 * each message carries and its payload JSON Schema, compiled once.
 *
 * Messages come from (2.x) channels.*.publish|subscribe.message (+ oneOf)
 * and components.messages; (3.0) channels.*.messages, operations.*.messages
 * and components.messages. A message reached several ways is listed once.
 * Its CloudEvents type: types.<message> of the [contracts NAME] section,
 * else payload.properties.type.const (the payload is then the whole
 * structured CloudEvent), else headers.properties.ce_type|ce-type|type.const.
 *
 * A loaded contract is immutable: ceb_contract_check may run on any number
 * of threads at once. Load and free on one thread. */
#ifndef CEB_CONTRACT_H
#define CEB_CONTRACT_H

#include <stddef.h>

#include <ceb/event.h>
#include <ceb/validate.h>
#include <jansson.h>

#include "schema/ceb_schema.h"

typedef struct ceb_contract_msg {
  char *name;            /* messageId, name, or the key it is listed under */
  char *ce_type;         /* CloudEvents type; NULL when none is known */
  char *content_type;    /* contentType or defaultContentType; may be NULL */
  char *channel;         /* channel address/key; NULL: only in components */
  char *operation;       /* 2.x publish|subscribe, 3.0 operation id; NULL */
  char *pointer;         /* JSON Pointer of the message object */
  char *payload_pointer; /* JSON Pointer of the payload schema; NULL: none */
  int envelope;          /* payload describes the whole structured event */
  ceb_schema *payload;   /* compiled payload; NULL: not checked (see note) */
  char *note;            /* why payload is NULL (non-JSON schemaFormat,
                            compile error); NULL otherwise */
  int compile_failed;    /* a JSON Schema payload that did not compile */
  json_t *merged;        /* the message with its traits applied */
} ceb_contract_msg;

typedef struct ceb_contract {
  char *name;
  char *version;  /* info.version */
  char *asyncapi; /* "2.6.0", "3.0.0" */
  int major;      /* 2 or 3 */
  json_t *doc;    /* the document (plus x-ceb-merged payloads) */
  ceb_contract_msg *msgs;
  size_t nmsgs;
} ceb_contract;

typedef struct ceb_contract_opts {
  /* Object message name -> CloudEvents type (types.<message> of the
   * contracts section); borrowed; may be NULL. */
  json_t *types;
  /* Non-zero: compile payload schemas (checks, diff need not). */
  int compile;
} ceb_contract_opts;

/* Parses a bundled JSON document and extracts its messages. `name` is the
 * contract name. CEB_OK with *out (ceb_contract_free), or CEB_EINVAL with a
 * reason in err (not JSON, no asyncapi/info.version, unsupported major,
 * $ref cycle or dangling local $ref). */
int ceb_contract_load(const char *name, const char *text, size_t len,
                      const ceb_contract_opts *opts, ceb_contract **out,
                      char *err, size_t errlen);
void ceb_contract_free(ceb_contract *c);

/* First message carrying CloudEvents type `type`, from index *from on
 * (start with 0; *from is moved past the hit). NULL when none is left. */
const ceb_contract_msg *ceb_contract_find_type(const ceb_contract *c,
                                               const char *type, size_t *from);
const ceb_contract_msg *ceb_contract_find_name(const ceb_contract *c,
                                               const char *name);

/* Checks ev against the contract: the type maps to a message
 * (contract.type_unknown), dataschema names a compatible version
 * (contract.dataschema), data validates against the payload schema
 * (contract.payload, "instance-path: message (schema path)"). Appends to v
 * (not reset). Returns CEB_OK or CEB_EVALIDATION. Thread-safe. */
int ceb_contract_check(const ceb_contract *c, const ceb_event *ev,
                       ceb_violations *v);

/* Appends one error violation to v (counts past CEB_MAX_VIOLATIONS). */
void ceb_contract_violation(ceb_violations *v, const char *code,
                            const char *attribute, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- helpers shared with the diff and the tests ---- */

/* The value at RFC 6901 pointer ptr ("" = doc), borrowed; NULL if absent. */
json_t *ceb_json_pointer_get(json_t *doc, const char *ptr);
/* Appends "/" + the escaped token to buf; -1 when it does not fit. */
int ceb_json_pointer_append(char *buf, size_t size, const char *token);

/* Follows local "$ref"s ("#/...") from node (at pointer ptr, a buffer of
 * ptr_size bytes updated to the target's pointer; may be NULL). Returns the
 * target (borrowed), or NULL with err set on a cycle, a dangling or a
 * non-local reference. */
json_t *ceb_json_deref(json_t *doc, json_t *node, char *ptr, size_t ptr_size,
                       char *err, size_t errlen);

/* Applies message traits: major 2 merges each trait onto the message as a
 * JSON Merge Patch (RFC 7386) in order, so a trait's field replaces the
 * message's; major 3 merges them in order underneath the message, so a
 * trait never overrides a field the message sets. message and traits
 * (resolved objects) are borrowed; returns a new object without "traits". */
json_t *ceb_contract_apply_traits(int major, json_t *message,
                                  json_t *const *traits, size_t ntraits);

/* JSON Merge Patch (RFC 7386): returns a new value, target and patch
 * borrowed. */
json_t *ceb_json_merge_patch(json_t *target, json_t *patch);

#endif
