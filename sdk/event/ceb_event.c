/* The in-memory CloudEvent: attributes kept sorted in the documented
 * iteration order, data bytes with their kind, an atomic reference count. */
#include "ceb_event_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct ceb_attr {
  char *name;
  char *value;
  ceb_attr_type type;
  size_t rank; /* context_rank(name), kept: lookups compare ranks first */
} ceb_attr;

struct ceb_event {
  atomic_int refs;
  ceb_attr *attrs;
  size_t count;
  size_t cap;
  unsigned char *data; /* NUL-terminated copy, NULL when kind is NONE */
  size_t data_len;
  ceb_data_kind kind;
  /* JSON data that this library serialised or cut from parsed input:
   * known to be one valid JSON value, so validation and encoding need not
   * parse it again. Cleared by every ceb_event_set_data. */
  int json_trusted;
  /* ceb_event_validate found no CloudEvents error in the current content
   * (cebi_event_mark_ce_valid): a later validation (the host's, after a
   * plugin's) runs only the size limit and the profile rules. Cleared by
   * every change. Atomic: set through a const pointer by a validator. */
  atomic_int ce_valid;
};

typedef struct context_attr {
  const char *name;
  ceb_attr_type type;
} context_attr;

/* CloudEvents 1.0 context attributes in iteration order. */
static const context_attr k_context[] = {
    {"specversion", CEB_ATTR_STRING},     {"id", CEB_ATTR_STRING},
    {"source", CEB_ATTR_URI_REF},         {"type", CEB_ATTR_STRING},
    {"datacontenttype", CEB_ATTR_STRING}, {"dataschema", CEB_ATTR_URI},
    {"subject", CEB_ATTR_STRING},         {"time", CEB_ATTR_TIMESTAMP},
};
#define CONTEXT_COUNT (sizeof k_context / sizeof k_context[0])

/* Called on every attribute lookup and comparison: the first letter picks
 * the one or few candidates to compare. */
static size_t context_rank(const char *name) {
  size_t first, last;
  switch (name[0]) {
  case 's': /* specversion, source, subject */
    first = 0, last = 6;
    break;
  case 'i':
    first = last = 1;
    break;
  case 't':
    first = 3, last = 7;
    break;
  case 'd':
    first = 4, last = 5;
    break;
  default:
    return CONTEXT_COUNT;
  }
  for (size_t i = first; i <= last; i++)
    if (k_context[i].name[0] == name[0] && strcmp(k_context[i].name, name) == 0)
      return i;
  return CONTEXT_COUNT;
}

int ceb_attr_is_context(const char *name) {
  return name && context_rank(name) < CONTEXT_COUNT;
}

ceb_attr_type ceb_attr_context_type(const char *name) {
  size_t r = name ? context_rank(name) : CONTEXT_COUNT;
  return r < CONTEXT_COUNT ? k_context[r].type : CEB_ATTR_STRING;
}

/* Order: context attributes by rank, then extensions by name. */
static int attr_cmp(const ceb_attr *a, size_t rank, const char *name) {
  if (a->rank != rank) return a->rank < rank ? -1 : 1;
  return rank < CONTEXT_COUNT ? 0 : strcmp(a->name, name);
}

/* Index of name (whose context_rank is rank), or -(insertion point) - 1. */
static long attr_find_ranked(const ceb_event *ev, const char *name,
                             size_t rank) {
  size_t lo = 0, hi = ev->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = attr_cmp(&ev->attrs[mid], rank, name);
    if (c == 0) return (long)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -(long)lo - 1;
}

static long attr_find(const ceb_event *ev, const char *name) {
  return attr_find_ranked(ev, name, context_rank(name));
}

ceb_event *ceb_event_new(void) {
  ceb_event *ev = calloc(1, sizeof *ev);
  if (!ev) return NULL;
  atomic_init(&ev->refs, 1);
  return ev;
}

ceb_event *ceb_event_ref(ceb_event *ev) {
  if (ev) atomic_fetch_add_explicit(&ev->refs, 1, memory_order_relaxed);
  return ev;
}

static void event_free(ceb_event *ev) {
  for (size_t i = 0; i < ev->count; i++) {
    free(ev->attrs[i].name);
    free(ev->attrs[i].value);
  }
  free(ev->attrs);
  free(ev->data);
  free(ev);
}

void ceb_event_unref(ceb_event *ev) {
  if (!ev) return;
  if (atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) == 1)
    event_free(ev);
}

ceb_event *ceb_event_clone(const ceb_event *ev) {
  if (!ev) return NULL;
  ceb_event *c = ceb_event_new();
  if (!c) return NULL;
  for (size_t i = 0; i < ev->count; i++) {
    const ceb_attr *a = &ev->attrs[i];
    if (ceb_event_set_typed(c, a->name, a->type, a->value) != CEB_OK) goto fail;
  }
  if (ev->kind != CEB_DATA_NONE &&
      ceb_event_set_data(c, ev->data, ev->data_len, ev->kind) != CEB_OK)
    goto fail;
  c->json_trusted = ev->json_trusted;
  return c;
fail:
  ceb_event_unref(c);
  return NULL;
}

static void attr_remove(ceb_event *ev, size_t i) {
  free(ev->attrs[i].name);
  free(ev->attrs[i].value);
  memmove(&ev->attrs[i], &ev->attrs[i + 1],
          (ev->count - i - 1) * sizeof ev->attrs[0]);
  ev->count--;
}

int ceb_event_set_typed(ceb_event *ev, const char *name, ceb_attr_type type,
                        const char *value) {
  if (!ev || !name || !*name || strlen(name) > CEB_ATTR_NAME_MAX)
    return CEB_EINVAL;
  if (type < CEB_ATTR_STRING || type > CEB_ATTR_TIMESTAMP) return CEB_EINVAL;
  if (value && strlen(value) > CEB_ATTR_VALUE_MAX) return CEB_EINVAL;
  size_t rank = context_rank(name); /* once: lookups and insertion use it */
  if (rank < CONTEXT_COUNT)
    type = k_context[rank].type; /* context types are fixed */
  long at = attr_find_ranked(ev, name, rank);
  atomic_store_explicit(&ev->ce_valid, 0, memory_order_relaxed);
  if (!value) {
    if (at >= 0) attr_remove(ev, (size_t)at);
    return CEB_OK;
  }
  char *v = strdup(value);
  if (!v) return CEB_ENOMEM;
  if (at >= 0) {
    free(ev->attrs[at].value);
    ev->attrs[at].value = v;
    ev->attrs[at].type = type;
    return CEB_OK;
  }
  if (ev->count == ev->cap) {
    size_t cap = ev->cap ? ev->cap * 2 : 8;
    ceb_attr *a = realloc(ev->attrs, cap * sizeof *a);
    if (!a) {
      free(v);
      return CEB_ENOMEM;
    }
    ev->attrs = a;
    ev->cap = cap;
  }
  char *n = strdup(name);
  if (!n) {
    free(v);
    return CEB_ENOMEM;
  }
  size_t pos = (size_t)(-at - 1);
  memmove(&ev->attrs[pos + 1], &ev->attrs[pos],
          (ev->count - pos) * sizeof ev->attrs[0]);
  ev->attrs[pos] = (ceb_attr){n, v, type, rank};
  ev->count++;
  return CEB_OK;
}

int ceb_event_set(ceb_event *ev, const char *name, const char *value) {
  return ceb_event_set_typed(ev, name, ceb_attr_context_type(name), value);
}

const char *ceb_event_get(const ceb_event *ev, const char *name) {
  if (!ev || !name) return NULL;
  long at = attr_find(ev, name);
  return at >= 0 ? ev->attrs[at].value : NULL;
}

ceb_attr_type ceb_event_get_type(const ceb_event *ev, const char *name) {
  if (!ev || !name) return CEB_ATTR_STRING;
  long at = attr_find(ev, name);
  return at >= 0 ? ev->attrs[at].type : CEB_ATTR_STRING;
}

size_t ceb_event_attr_count(const ceb_event *ev) {
  return ev ? ev->count : 0;
}

int ceb_event_attr_at(const ceb_event *ev, size_t index, const char **name,
                      const char **value, ceb_attr_type *type) {
  if (!ev || index >= ev->count) return CEB_EINVAL;
  if (name) *name = ev->attrs[index].name;
  if (value) *value = ev->attrs[index].value;
  if (type) *type = ev->attrs[index].type;
  return CEB_OK;
}

int ceb_event_set_data(ceb_event *ev, const void *data, size_t len,
                       ceb_data_kind kind) {
  if (!ev || kind < CEB_DATA_NONE || kind > CEB_DATA_JSON ||
      (!data && len && kind != CEB_DATA_NONE))
    return CEB_EINVAL;
  unsigned char *copy = NULL;
  if (kind != CEB_DATA_NONE) {
    copy = (unsigned char *)cebi_memdup(data, len);
    if (!copy) return CEB_ENOMEM;
  }
  free(ev->data);
  ev->data = copy;
  ev->data_len = kind != CEB_DATA_NONE ? len : 0;
  ev->kind = kind;
  ev->json_trusted = 0;
  atomic_store_explicit(&ev->ce_valid, 0, memory_order_relaxed);
  return CEB_OK;
}

int cebi_event_take_json_data(ceb_event *ev, char *text, size_t len) {
  if (!ev || !text) return CEB_EINVAL;
  free(ev->data);
  ev->data = (unsigned char *)text;
  ev->data_len = len;
  ev->kind = CEB_DATA_JSON;
  ev->json_trusted = 1;
  atomic_store_explicit(&ev->ce_valid, 0, memory_order_relaxed);
  return CEB_OK;
}

void cebi_event_mark_ce_valid(const ceb_event *ev) {
  /* the mark is a cache of a pure function of the content, not part of the
   * event's value: writing it through a const pointer is safe (atomic) */
  atomic_store_explicit(&((ceb_event *)ev)->ce_valid, 1, memory_order_relaxed);
}

int ceb_event_checked(const ceb_event *ev) {
  return ev && atomic_load_explicit(&((ceb_event *)ev)->ce_valid,
                                    memory_order_relaxed);
}

int cebi_event_json_trusted(const ceb_event *ev) {
  return ev && ev->kind == CEB_DATA_JSON && ev->json_trusted;
}

const void *ceb_event_data(const ceb_event *ev, size_t *len) {
  if (len) *len = ev ? ev->data_len : 0;
  return ev ? ev->data : NULL;
}

ceb_data_kind ceb_event_data_kind(const ceb_event *ev) {
  return ev ? ev->kind : CEB_DATA_NONE;
}

size_t ceb_event_size(const ceb_event *ev) {
  if (!ev) return 0;
  size_t n = ev->data_len;
  for (size_t i = 0; i < ev->count; i++)
    n += strlen(ev->attrs[i].name) + strlen(ev->attrs[i].value);
  return n;
}
