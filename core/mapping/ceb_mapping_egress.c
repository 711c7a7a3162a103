/* An egress mapping's output read into a ceb_mapped_out: see
 * ceb_mapping_egress.h. */
#include "mapping/ceb_mapping_egress.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

struct ceb_egress_out {
  ceb_mapped_out out;
  json_t *root;           /* the output; strings point into it */
  char *body;             /* a non-string body's JSON text */
  ceb_mapped_header *hdr; /* headers, pointing into root */
};

void ceb_egress_free(ceb_egress_out *m) {
  if (!m) return;
  json_decref(m->root);
  free(m->body);
  free(m->hdr);
  free(m);
}

const ceb_mapped_out *ceb_egress_mapped(const ceb_egress_out *m) {
  return m ? &m->out : NULL;
}

static int has_ctl(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
  return 0;
}

static int token(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s)) return 0;
  return 1;
}

ceb_egress_out *ceb_egress_read(const char *text, char *why, size_t cap) {
  json_error_t je;
  json_t *root = json_loads(text, JSON_DECODE_ANY, &je);
  ceb_egress_out *m = NULL;
  if (!json_is_object(root) || !json_object_get(root, "body")) {
    snprintf(why, cap,
             "the output must be an object with a body member ({\"body\": "
             "..., \"headers\": {...}, \"key\": ..., \"topic\": ...})");
    goto fail;
  }
  m = calloc(1, sizeof *m);
  if (!m) goto nomem;
  m->root = root;
  m->out.struct_size = sizeof m->out;
  const char *k;
  json_t *v;
  json_object_foreach(root, k, v) {
    if (strcmp(k, "body") == 0) {
      if (json_is_string(v)) {
        m->out.body = json_string_value(v);
        m->out.body_len = json_string_length(v);
        m->out.content_type = "text/plain; charset=utf-8";
      } else {
        m->body = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!m->body) goto nomem;
        m->out.body = m->body;
        m->out.body_len = strlen(m->body);
        m->out.content_type = "application/json";
      }
    } else if (strcmp(k, "headers") == 0) {
      if (!json_is_object(v)) {
        snprintf(why, cap, "headers must be an object of strings");
        goto fail;
      }
      m->hdr = calloc(json_object_size(v) + 1, sizeof *m->hdr);
      if (!m->hdr) goto nomem;
      const char *hk;
      json_t *hv;
      json_object_foreach(v, hk, hv) {
        if (!token(hk) || !json_is_string(hv) ||
            has_ctl(json_string_value(hv)) ||
            strlen(json_string_value(hv)) != json_string_length(hv)) {
          snprintf(why, cap,
                   "header %.60s: the name must be a token and the value a "
                   "string without control characters",
                   hk);
          goto fail;
        }
        m->hdr[m->out.nheaders++] =
            (ceb_mapped_header){hk, json_string_value(hv)};
      }
      m->out.headers = m->hdr;
    } else if (strcmp(k, "key") == 0) {
      if (!json_is_string(v) && !json_is_null(v)) {
        snprintf(why, cap, "key must be a string or null");
        goto fail;
      }
      m->out.key = json_is_string(v) ? json_string_value(v) : NULL;
    } else if (strcmp(k, "topic") == 0 || strcmp(k, "content_type") == 0) {
      if (!json_is_string(v) || !*json_string_value(v) ||
          has_ctl(json_string_value(v))) {
        snprintf(why, cap,
                 "%s must be a non-empty string without control characters", k);
        goto fail;
      }
      if (k[0] == 't') m->out.topic = json_string_value(v);
    } else {
      snprintf(why, cap,
               "unknown member '%.60s' (body, content_type, headers, key, "
               "topic)",
               k);
      goto fail;
    }
  }
  /* after the loop: body sets its default whatever the members' order */
  json_t *ct = json_object_get(root, "content_type");
  if (ct) m->out.content_type = json_string_value(ct);
  return m;
nomem:
  snprintf(why, cap, "out of memory");
fail:
  if (m)
    ceb_egress_free(m);
  else
    json_decref(root);
  return NULL;
}
