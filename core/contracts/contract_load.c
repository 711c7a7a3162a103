/* Loading a contract: messages of AsyncAPI 2.x / 3.0 documents, traits,
 * CloudEvents types, payload schemas compiled once. */
#include "contracts/ceb_contract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTR_MAX 1024
#define MAX_MESSAGES 4096

typedef struct load_ctx {
  ceb_contract *c;
  size_t cap;
  char *err;
  size_t errlen;
  int failed;
} load_ctx;

static char *dup_or_null(const char *s) {
  return s ? strdup(s) : NULL;
}

static void msg_clear(ceb_contract_msg *m) {
  free(m->name);
  free(m->ce_type);
  free(m->content_type);
  free(m->channel);
  free(m->operation);
  free(m->pointer);
  free(m->payload_pointer);
  free(m->note);
  ceb_schema_free(m->payload);
  json_decref(m->merged);
}

void ceb_contract_free(ceb_contract *c) {
  if (!c) return;
  for (size_t i = 0; i < c->nmsgs; i++)
    msg_clear(&c->msgs[i]);
  free(c->msgs);
  free(c->name);
  free(c->version);
  free(c->asyncapi);
  json_decref(c->doc);
  free(c);
}

static void fail(load_ctx *x, const char *fmt, const char *a, const char *b) {
  if (!x->failed) snprintf(x->err, x->errlen, fmt, a, b);
  x->failed = 1;
}

/* Adds the message at node/ptr (following $refs), or completes the entry
 * already listed for the same object. */
static void add_message(load_ctx *x, json_t *node, const char *ptr,
                        const char *key, const char *channel,
                        const char *operation) {
  if (x->failed) return;
  char mptr[PTR_MAX], derr[256];
  snprintf(mptr, sizeof mptr, "%s", ptr);
  json_t *m =
      ceb_json_deref(x->c->doc, node, mptr, sizeof mptr, derr, sizeof derr);
  if (!m) {
    fail(x, "message at %s: %s", ptr, derr);
    return;
  }
  if (!json_is_object(m))
    return; /* not a message object: the schema check is not ours */
  for (size_t i = 0; i < x->c->nmsgs; i++) {
    ceb_contract_msg *e = &x->c->msgs[i];
    if (strcmp(e->pointer, mptr) == 0) {
      if (!e->channel && channel) e->channel = strdup(channel);
      if (!e->operation && operation) e->operation = strdup(operation);
      return;
    }
  }
  if (x->c->nmsgs == MAX_MESSAGES) {
    fail(x, "more than %s messages%s", "4096", "");
    return;
  }
  if (x->c->nmsgs == x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 16;
    ceb_contract_msg *n = realloc(x->c->msgs, cap * sizeof *n);
    if (!n) {
      fail(x, "out of memory%s%s", "", "");
      return;
    }
    x->c->msgs = n;
    x->cap = cap;
  }
  ceb_contract_msg *e = &x->c->msgs[x->c->nmsgs++];
  memset(e, 0, sizeof *e);
  e->pointer = strdup(mptr);
  e->channel = dup_or_null(channel);
  e->operation = dup_or_null(operation);
  /* The key the object is filed under when it lives in a map. */
  const char *slash = strrchr(mptr, '/');
  const char *own_key = key;
  if ((strncmp(mptr, "/components/messages/", 21) == 0 && slash == mptr + 20) ||
      (strncmp(mptr, "/x-ceb-bundled/", 15) == 0 && slash == mptr + 14))
    own_key = slash + 1;
  e->name = dup_or_null(own_key); /* replaced after traits if better known */
}

static void add_message_or_oneof(load_ctx *x, json_t *node, const char *ptr,
                                 const char *channel, const char *operation) {
  char p[PTR_MAX], derr[256];
  snprintf(p, sizeof p, "%s", ptr);
  json_t *m = ceb_json_deref(x->c->doc, node, p, sizeof p, derr, sizeof derr);
  if (!m) {
    fail(x, "message at %s: %s", ptr, derr);
    return;
  }
  json_t *one = json_object_get(m, "oneOf");
  if (!json_is_array(one)) {
    add_message(x, m, p, NULL, channel, operation);
    return;
  }
  size_t i;
  json_t *it;
  json_array_foreach(one, i, it) {
    char ip[PTR_MAX];
    if (snprintf(ip, sizeof ip, "%s/oneOf/%zu", p, i) >= (int)sizeof ip)
      continue;
    add_message(x, it, ip, NULL, channel, operation);
  }
}

static void collect_v2(load_ctx *x) {
  json_t *doc = x->c->doc;
  const char *ch;
  json_t *item;
  json_object_foreach(json_object_get(doc, "channels"), ch, item) {
    char cp[PTR_MAX] = "/channels", derr[256];
    ceb_json_pointer_append(cp, sizeof cp, ch);
    json_t *c = ceb_json_deref(doc, item, cp, sizeof cp, derr, sizeof derr);
    if (!c) {
      fail(x, "channel %s: %s", ch, derr);
      return;
    }
    static const char *ops[] = {"publish", "subscribe"};
    for (int o = 0; o < 2; o++) {
      json_t *op = json_object_get(c, ops[o]);
      json_t *msg = json_object_get(op, "message");
      if (!msg) continue;
      char mp[PTR_MAX];
      if (snprintf(mp, sizeof mp, "%s/%s/message", cp, ops[o]) >=
          (int)sizeof mp)
        continue;
      add_message_or_oneof(x, msg, mp, ch, ops[o]);
    }
  }
}

static void collect_v3(load_ctx *x) {
  json_t *doc = x->c->doc;
  const char *ch;
  json_t *item;
  json_object_foreach(json_object_get(doc, "channels"), ch, item) {
    char cp[PTR_MAX] = "/channels", derr[256];
    ceb_json_pointer_append(cp, sizeof cp, ch);
    json_t *c = ceb_json_deref(doc, item, cp, sizeof cp, derr, sizeof derr);
    if (!c) {
      fail(x, "channel %s: %s", ch, derr);
      return;
    }
    const char *address = json_string_value(json_object_get(c, "address"));
    const char *mk;
    json_t *m;
    json_object_foreach(json_object_get(c, "messages"), mk, m) {
      char mp[PTR_MAX];
      if (snprintf(mp, sizeof mp, "%s/messages", cp) >= (int)sizeof mp ||
          ceb_json_pointer_append(mp, sizeof mp, mk) != 0)
        continue;
      add_message(x, m, mp, mk, address ? address : ch, NULL);
    }
  }
  const char *opk;
  json_t *op;
  json_object_foreach(json_object_get(doc, "operations"), opk, op) {
    char op_ptr[PTR_MAX] = "/operations", derr[256];
    ceb_json_pointer_append(op_ptr, sizeof op_ptr, opk);
    json_t *o =
        ceb_json_deref(doc, op, op_ptr, sizeof op_ptr, derr, sizeof derr);
    if (!o) {
      fail(x, "operation %s: %s", opk, derr);
      return;
    }
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(o, "messages"), i, m) {
      char mp[PTR_MAX];
      if (snprintf(mp, sizeof mp, "%s/messages/%zu", op_ptr, i) >=
          (int)sizeof mp)
        continue;
      add_message(x, m, mp, NULL, NULL, opk);
    }
  }
}

static void collect_components(load_ctx *x) {
  const char *k;
  json_t *m;
  json_t *msgs =
      json_object_get(json_object_get(x->c->doc, "components"), "messages");
  json_object_foreach(msgs, k, m) {
    char mp[PTR_MAX] = "/components/messages";
    ceb_json_pointer_append(mp, sizeof mp, k);
    add_message(x, m, mp, k, NULL, NULL);
  }
}

/* "const" of a property schema, or its single enum value. */
static const char *const_string(json_t *doc, json_t *prop) {
  char derr[256];
  prop = ceb_json_deref(doc, prop, NULL, 0, derr, sizeof derr);
  if (!json_is_object(prop)) return NULL;
  json_t *c = json_object_get(prop, "const");
  if (json_is_string(c)) return json_string_value(c);
  json_t *e = json_object_get(prop, "enum");
  if (json_is_array(e) && json_array_size(e) == 1 &&
      json_is_string(json_array_get(e, 0)))
    return json_string_value(json_array_get(e, 0));
  return NULL;
}

/* properties.<name> of a schema, looking into allOf branches too. */
static json_t *schema_property(json_t *doc, json_t *schema, const char *name,
                               int depth) {
  char derr[256];
  schema = ceb_json_deref(doc, schema, NULL, 0, derr, sizeof derr);
  if (!json_is_object(schema) || depth > 8) return NULL;
  json_t *p = json_object_get(json_object_get(schema, "properties"), name);
  if (p) return p;
  size_t i;
  json_t *b;
  json_array_foreach(json_object_get(schema, "allOf"), i, b) {
    if ((p = schema_property(doc, b, name, depth + 1))) return p;
  }
  return NULL;
}

/* The schema inside a 3.0 Multi Format Schema Object, and its format. */
static json_t *unwrap_multiformat(json_t *doc, json_t *payload,
                                  const char **format) {
  char derr[256];
  json_t *p = ceb_json_deref(doc, payload, NULL, 0, derr, sizeof derr);
  if (json_is_object(p) && json_is_string(json_object_get(p, "schemaFormat")) &&
      json_object_get(p, "schema")) {
    *format = json_string_value(json_object_get(p, "schemaFormat"));
    return json_object_get(p, "schema");
  }
  return payload;
}

static int json_schema_format(const char *format) {
  if (!format) return 1;
  return strstr(format, "application/vnd.aai.asyncapi") == format ||
         strstr(format, "application/schema+json") == format ||
         strstr(format, "application/schema+yaml") == format;
}

/* Where the merged payload can be compiled from: the message's own payload
 * or the one trait that provides it; else a copy under /x-ceb-merged. */
static char *payload_location(load_ctx *x, ceb_contract_msg *e, json_t *msg,
                              json_t *const *traits, char **tptrs,
                              size_t ntraits, json_t *payload, size_t idx) {
  int sources = json_object_get(msg, "payload") ? 1 : 0;
  const char *src = NULL;
  char buf[PTR_MAX];
  if (sources) {
    snprintf(buf, sizeof buf, "%s/payload", e->pointer);
    src = buf;
  }
  for (size_t i = 0; i < ntraits; i++)
    if (json_object_get(traits[i], "payload")) {
      if (sources++ == 0) {
        snprintf(buf, sizeof buf, "%s/payload", tptrs[i]);
        src = buf;
      }
    }
  if (sources == 1) return strdup(src);
  json_t *bag = json_object_get(x->c->doc, "x-ceb-merged");
  if (!bag) {
    bag = json_object();
    json_object_set_new(x->c->doc, "x-ceb-merged", bag);
  }
  char key[32];
  snprintf(key, sizeof key, "%zu", idx);
  json_object_set(bag, key, payload);
  snprintf(buf, sizeof buf, "/x-ceb-merged/%zu", idx);
  return strdup(buf);
}

static void finish_message(load_ctx *x, size_t idx,
                           const ceb_contract_opts *opts) {
  ceb_contract *c = x->c;
  ceb_contract_msg *e = &c->msgs[idx];
  json_t *doc = c->doc;
  json_t *msg = ceb_json_pointer_get(doc, e->pointer);
  json_t *traits_in = json_object_get(msg, "traits");
  size_t nt = json_array_size(traits_in);
  json_t **traits = calloc(nt ? nt : 1, sizeof *traits);
  char **tptrs = calloc(nt ? nt : 1, sizeof *tptrs);
  if (!traits || !tptrs) {
    free(traits);
    free(tptrs);
    fail(x, "out of memory%s%s", "", "");
    return;
  }
  for (size_t i = 0; i < nt && !x->failed; i++) {
    char tp[PTR_MAX], derr[256];
    snprintf(tp, sizeof tp, "%s/traits/%zu", e->pointer, i);
    traits[i] = ceb_json_deref(doc, json_array_get(traits_in, i), tp, sizeof tp,
                               derr, sizeof derr);
    if (!traits[i]) fail(x, "message trait at %s: %s", tp, derr);
    tptrs[i] = strdup(tp);
  }
  if (!x->failed) {
    e->merged = ceb_contract_apply_traits(c->major, msg, traits, nt);
    if (!e->merged) fail(x, "out of memory%s%s", "", "");
  }
  if (!x->failed) {
    json_t *mm = e->merged;
    const char *id = json_string_value(json_object_get(mm, "messageId"));
    const char *nm = json_string_value(json_object_get(mm, "name"));
    /* 3.0 has no messageId: the key a message is filed under is its id
     * (a trait's "name" must not rename it). */
    const char *better = id ? id : nm ? nm : NULL;
    if (c->major >= 3 && e->name) better = NULL;
    if (better || !e->name) {
      char fallback[32];
      snprintf(fallback, sizeof fallback, "message%zu", idx + 1);
      free(e->name);
      e->name = strdup(better ? better : fallback);
    }
    const char *ct = json_string_value(json_object_get(mm, "contentType"));
    if (!ct) ct = json_string_value(json_object_get(doc, "defaultContentType"));
    e->content_type = dup_or_null(ct);
    const char *format = json_string_value(json_object_get(mm, "schemaFormat"));
    json_t *payload = json_object_get(mm, "payload");
    json_t *schema = payload ? unwrap_multiformat(doc, payload, &format) : NULL;
    /* The CloudEvents type: configured, structured payload, or header. */
    const char *type = NULL;
    json_t *mapped =
        opts && opts->types ? json_object_get(opts->types, e->name) : NULL;
    if (json_is_string(mapped)) type = json_string_value(mapped);
    if (schema && json_schema_format(format)) {
      const char *t =
          const_string(doc, schema_property(doc, schema, "type", 0));
      if (t || schema_property(doc, schema, "specversion", 0) ||
          (ct && strncmp(ct, "application/cloudevents+json", 28) == 0))
        e->envelope = 1;
      if (!type) type = t;
    }
    json_t *headers = json_object_get(mm, "headers");
    const char *hformat = NULL;
    headers = headers ? unwrap_multiformat(doc, headers, &hformat) : NULL;
    static const char *hnames[] = {"ce_type", "ce-type", "type"};
    for (int i = 0; !type && headers && i < 3; i++)
      type = const_string(doc, schema_property(doc, headers, hnames[i], 0));
    e->ce_type = dup_or_null(type);
    if (schema && !json_schema_format(format)) {
      size_t n = strlen(format) + 64;
      e->note = malloc(n);
      if (e->note)
        snprintf(e->note, n, "payload schemaFormat %s is not checked", format);
    } else if (schema) {
      json_t *where = schema != payload ? NULL : payload;
      if (where)
        e->payload_pointer =
            payload_location(x, e, msg, traits, tptrs, nt, payload, idx);
      else {
        char buf[PTR_MAX];
        char *pp = payload_location(x, e, msg, traits, tptrs, nt, payload, idx);
        snprintf(buf, sizeof buf, "%s/schema", pp ? pp : "");
        free(pp);
        e->payload_pointer = strdup(buf);
      }
    }
  }
  for (size_t i = 0; i < nt; i++)
    free(tptrs[i]);
  free(tptrs);
  free(traits);
}

static void compile_payload(ceb_contract *c, ceb_contract_msg *e) {
  if (!e->payload_pointer) return;
  ceb_schema_opts so = {.draft = CEB_SCHEMA_DRAFT7,
                        .assert_formats = 1,
                        .pointer = e->payload_pointer};
  char err[256] = "";
  if (ceb_schema_compile(c->doc, NULL, &so, &e->payload, err, sizeof err) ==
      CEB_OK)
    return;
  e->compile_failed = 1;
  size_t n = strlen(err) + 64;
  free(e->note);
  e->note = malloc(n);
  if (e->note) snprintf(e->note, n, "payload schema does not compile: %s", err);
}

int ceb_contract_load(const char *name, const char *text, size_t len,
                      const ceb_contract_opts *opts, ceb_contract **out,
                      char *err, size_t errlen) {
  *out = NULL;
  json_error_t je;
  json_t *doc = json_loadb(text, len, 0, &je);
  if (!json_is_object(doc)) {
    snprintf(err, errlen, "not a JSON object (line %d: %s)", je.line,
             doc ? "top level is not an object" : je.text);
    json_decref(doc);
    return CEB_EINVAL;
  }
  const char *aa = json_string_value(json_object_get(doc, "asyncapi"));
  const char *ver = json_string_value(
      json_object_get(json_object_get(doc, "info"), "version"));
  if (!aa || !ver) {
    snprintf(err, errlen, "not an AsyncAPI document: %s is missing",
             aa ? "info.version" : "asyncapi");
    json_decref(doc);
    return CEB_EINVAL;
  }
  int major = aa[0] == '2' && aa[1] == '.'   ? 2
              : aa[0] == '3' && aa[1] == '.' ? 3
                                             : 0;
  if (!major) {
    snprintf(err, errlen, "AsyncAPI %s is not supported (2.x and 3.x are)", aa);
    json_decref(doc);
    return CEB_EINVAL;
  }
  ceb_contract *c = calloc(1, sizeof *c);
  if (!c) {
    json_decref(doc);
    return CEB_ENOMEM;
  }
  c->doc = doc;
  c->major = major;
  c->name = strdup(name ? name : "");
  c->version = strdup(ver);
  c->asyncapi = strdup(aa);
  load_ctx x = {.c = c, .err = err, .errlen = errlen};
  if (!c->name || !c->version || !c->asyncapi)
    fail(&x, "out of memory%s%s", "", "");
  if (major == 2)
    collect_v2(&x);
  else
    collect_v3(&x);
  collect_components(&x);
  for (size_t i = 0; i < c->nmsgs && !x.failed; i++)
    finish_message(&x, i, opts);
  for (size_t i = 0; i < c->nmsgs && !x.failed && opts && opts->compile; i++)
    compile_payload(c, &c->msgs[i]);
  if (x.failed) {
    ceb_contract_free(c);
    return CEB_EINVAL;
  }
  *out = c;
  return CEB_OK;
}

const ceb_contract_msg *ceb_contract_find_type(const ceb_contract *c,
                                               const char *type, size_t *from) {
  for (size_t i = *from; type && i < c->nmsgs; i++)
    if (c->msgs[i].ce_type && strcmp(c->msgs[i].ce_type, type) == 0) {
      *from = i + 1;
      return &c->msgs[i];
    }
  *from = c->nmsgs;
  return NULL;
}

const ceb_contract_msg *ceb_contract_find_name(const ceb_contract *c,
                                               const char *name) {
  for (size_t i = 0; i < c->nmsgs; i++)
    if (strcmp(c->msgs[i].name, name) == 0) return &c->msgs[i];
  return NULL;
}
