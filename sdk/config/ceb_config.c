/* The SDK's ceb_config: one section's key = value entries in file order,
 * plus the spec(s) used for defaults and typed reads. Built by the host's
 * loader (ceb_config_build.h), then read-only and readable from any thread.
 * The only lazily built data (split LIST values) is cached under a mutex so
 * that concurrent readers are safe. */
#include "config/ceb_config_build.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg_entry {
  char *key;
  char *value;
  char *file;
  int line;
  char *origin; /* "file:line" */
} cfg_entry;

typedef struct cfg_list {
  char *key;
  char *buf;          /* the joined values, split in place */
  const char **items; /* NULL-terminated, pointing into buf */
  size_t count;
  struct cfg_list *next;
} cfg_list;

struct ceb_config {
  char *name;
  cfg_entry *entries;
  size_t count, cap;
  const ceb_config_spec *spec, *spec2;
  pthread_mutex_t lists_lock;
  cfg_list *lists;
};

static char *dup_or_null(const char *s, int *failed) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *failed = 1;
  return d;
}

ceb_config *cebi_config_new(const char *name) {
  ceb_config *cfg = calloc(1, sizeof *cfg);
  if (!cfg) return NULL;
  int failed = 0;
  cfg->name = dup_or_null(name, &failed);
  if (failed || pthread_mutex_init(&cfg->lists_lock, NULL) != 0) {
    free(cfg->name);
    free(cfg);
    return NULL;
  }
  return cfg;
}

static void lists_clear(ceb_config *cfg, const char *key) {
  cfg_list **pp = &cfg->lists;
  while (*pp) {
    cfg_list *l = *pp;
    if (!key || strcmp(l->key, key) == 0) {
      *pp = l->next;
      free(l->key);
      free(l->buf);
      free(l->items);
      free(l);
    } else {
      pp = &l->next;
    }
  }
}

void cebi_config_free(ceb_config *cfg) {
  if (!cfg) return;
  for (size_t i = 0; i < cfg->count; i++) {
    free(cfg->entries[i].key);
    free(cfg->entries[i].value);
    free(cfg->entries[i].file);
    free(cfg->entries[i].origin);
  }
  free(cfg->entries);
  lists_clear(cfg, NULL);
  pthread_mutex_destroy(&cfg->lists_lock);
  free(cfg->name);
  free(cfg);
}

int cebi_config_put(ceb_config *cfg, const char *key, const char *value,
                    const char *file, int line) {
  if (!cfg || !key || !value) return CEB_EINVAL;
  if (cfg->count == cfg->cap) {
    size_t cap = cfg->cap ? cfg->cap * 2 : 8;
    cfg_entry *e = realloc(cfg->entries, cap * sizeof *e);
    if (!e) return CEB_ENOMEM;
    cfg->entries = e;
    cfg->cap = cap;
  }
  cfg_entry e = {0};
  int failed = 0;
  e.key = dup_or_null(key, &failed);
  e.value = dup_or_null(value, &failed);
  e.file = dup_or_null(file, &failed);
  e.line = line;
  if (!failed) {
    const char *f = file ? file : "?";
    size_t n = strlen(f) + 16;
    e.origin = malloc(n);
    if (e.origin)
      snprintf(e.origin, n, "%s:%d", f, line);
    else
      failed = 1;
  }
  if (failed) {
    free(e.key);
    free(e.value);
    free(e.file);
    free(e.origin);
    return CEB_ENOMEM;
  }
  cfg->entries[cfg->count++] = e;
  lists_clear(cfg, key);
  return CEB_OK;
}

void cebi_config_set_spec(ceb_config *cfg, const ceb_config_spec *spec,
                          const ceb_config_spec *spec2) {
  if (!cfg) return;
  cfg->spec = spec;
  cfg->spec2 = spec2;
  lists_clear(cfg, NULL); /* defaults may have changed */
}

int cebi_config_replace_at(ceb_config *cfg, size_t i, const char *value) {
  if (!cfg || !value || i >= cfg->count) return CEB_EINVAL;
  char *v = strdup(value);
  if (!v) return CEB_ENOMEM;
  /* Wipe the old text: it may be a secret reference's resolved value. */
  char *old = cfg->entries[i].value;
  memset(old, 0, strlen(old));
  free(old);
  cfg->entries[i].value = v;
  lists_clear(cfg, cfg->entries[i].key);
  return CEB_OK;
}

static const cfg_entry *entry_find(const ceb_config *cfg, const char *key) {
  if (!cfg || !key) return NULL;
  for (size_t i = 0; i < cfg->count; i++)
    if (strcmp(cfg->entries[i].key, key) == 0) return &cfg->entries[i];
  return NULL;
}

int cebi_config_replace(ceb_config *cfg, const char *key, const char *value) {
  const cfg_entry *e = entry_find(cfg, key);
  if (!e) return CEB_ENOTFOUND;
  return cebi_config_replace_at(cfg, (size_t)(e - cfg->entries), value);
}

size_t cebi_config_count(const ceb_config *cfg) {
  return cfg ? cfg->count : 0;
}

int cebi_config_entry(const ceb_config *cfg, size_t i, const char **key,
                      const char **value, const char **file, int *line) {
  if (!cfg || i >= cfg->count) return CEB_ENOTFOUND;
  const cfg_entry *e = &cfg->entries[i];
  if (key) *key = e->key;
  if (value) *value = e->value;
  if (file) *file = e->file;
  if (line) *line = e->line;
  return CEB_OK;
}

static const ceb_config_spec *spec_in(const ceb_config_spec *spec,
                                      const char *key) {
  for (; spec && spec->key; spec++) {
    if (spec->flags & CEB_CFG_PREFIX) {
      if (strncmp(key, spec->key, strlen(spec->key)) == 0) return spec;
    } else if (strcmp(key, spec->key) == 0) {
      return spec;
    }
  }
  return NULL;
}

const ceb_config_spec *cebi_config_spec_of(const ceb_config *cfg,
                                           const char *key) {
  if (!cfg || !key) return NULL;
  const ceb_config_spec *s = spec_in(cfg->spec, key);
  return s ? s : spec_in(cfg->spec2, key);
}

const char *ceb_config_str(const ceb_config *cfg, const char *key) {
  const cfg_entry *e = entry_find(cfg, key);
  if (e) return e->value;
  const ceb_config_spec *s = cebi_config_spec_of(cfg, key);
  return s ? s->default_value : NULL;
}

int64_t ceb_config_int(const ceb_config *cfg, const char *key, int64_t dflt) {
  int64_t v;
  const char *s = ceb_config_str(cfg, key);
  return s && ceb_parse_int(s, &v) == CEB_OK ? v : dflt;
}

int ceb_config_bool(const ceb_config *cfg, const char *key, int dflt) {
  int v;
  const char *s = ceb_config_str(cfg, key);
  return s && ceb_parse_bool(s, &v) == CEB_OK ? v : dflt;
}

int64_t ceb_config_duration_ms(const ceb_config *cfg, const char *key,
                               int64_t dflt) {
  int64_t v;
  const char *s = ceb_config_str(cfg, key);
  return s && ceb_parse_duration_ms(s, &v) == CEB_OK ? v : dflt;
}

uint64_t ceb_config_size(const ceb_config *cfg, const char *key,
                         uint64_t dflt) {
  uint64_t v;
  const char *s = ceb_config_str(cfg, key);
  return s && ceb_parse_size(s, &v) == CEB_OK ? v : dflt;
}

double ceb_config_rate(const ceb_config *cfg, const char *key, double dflt) {
  double v;
  const char *s = ceb_config_str(cfg, key);
  return s && ceb_parse_rate(s, &v) == CEB_OK ? v : dflt;
}

static int is_list_sep(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Builds the cached split of key: every entry's value in file order (MULTI
 * keys append), or the default when unset. Called with lists_lock held. */
static cfg_list *list_build(const ceb_config *cfg, const char *key) {
  size_t len = 0;
  int set = 0;
  for (size_t i = 0; i < cfg->count; i++) {
    if (strcmp(cfg->entries[i].key, key) == 0) {
      len += strlen(cfg->entries[i].value) + 1;
      set = 1;
    }
  }
  const char *dflt = NULL;
  if (!set) {
    const ceb_config_spec *s = cebi_config_spec_of(cfg, key);
    dflt = s ? s->default_value : NULL;
    len = dflt ? strlen(dflt) + 1 : 0;
  }
  cfg_list *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->key = strdup(key);
  l->buf = malloc(len + 1);
  /* at most one item per two bytes of text, plus the NULL */
  l->items = calloc(len / 2 + 2, sizeof *l->items);
  if (!l->key || !l->buf || !l->items) {
    free(l->key);
    free(l->buf);
    free(l->items);
    free(l);
    return NULL;
  }
  char *w = l->buf;
  *w = '\0';
  if (set) {
    for (size_t i = 0; i < cfg->count; i++) {
      if (strcmp(cfg->entries[i].key, key) == 0) {
        size_t n = strlen(cfg->entries[i].value);
        memcpy(w, cfg->entries[i].value, n);
        w[n] = ' ';
        w += n + 1;
      }
    }
    *w = '\0';
  } else if (dflt) {
    memcpy(l->buf, dflt, len);
  }
  for (char *p = l->buf; *p;) {
    while (*p && is_list_sep(*p))
      *p++ = '\0';
    if (!*p) break;
    l->items[l->count++] = p;
    while (*p && !is_list_sep(*p))
      p++;
  }
  l->items[l->count] = NULL;
  return l;
}

size_t ceb_config_list(const ceb_config *cfg, const char *key,
                       const char *const **items) {
  static const char *const empty[] = {NULL};
  if (items) *items = empty;
  if (!cfg || !key) return 0;
  ceb_config *mcfg = (ceb_config *)cfg; /* only the cache changes */
  pthread_mutex_lock(&mcfg->lists_lock);
  cfg_list *l = mcfg->lists;
  while (l && strcmp(l->key, key) != 0)
    l = l->next;
  if (!l && (l = list_build(cfg, key)) != NULL) {
    l->next = mcfg->lists;
    mcfg->lists = l;
  }
  pthread_mutex_unlock(&mcfg->lists_lock);
  if (!l) return 0;
  if (items) *items = l->items;
  return l->count;
}

int ceb_config_foreach(const ceb_config *cfg, const char *prefix,
                       int (*fn)(const char *key, const char *value, void *arg),
                       void *arg) {
  if (!cfg || !fn) return 0;
  size_t plen = prefix ? strlen(prefix) : 0;
  for (size_t i = 0; i < cfg->count; i++) {
    const cfg_entry *e = &cfg->entries[i];
    if (plen && strncmp(e->key, prefix, plen) != 0) continue;
    int rc = fn(e->key, e->value, arg);
    if (rc) return rc;
  }
  return 0;
}

const char *ceb_config_origin(const ceb_config *cfg, const char *key) {
  const cfg_entry *e = entry_find(cfg, key);
  return e ? e->origin : "default";
}

const char *ceb_config_name(const ceb_config *cfg) {
  return cfg ? cfg->name : NULL;
}

/* Parses text as spec type t into the field at dst. CEB_OK, or CEB_EINVAL
 * when text does not parse (the caller then tries the default). */
static int bind_parse(ceb_cfg_type t, const char *text, void *dst) {
  switch (t) {
  case CEB_CFG_INT: {
    int64_t v;
    if (ceb_parse_int(text, &v) != CEB_OK) return CEB_EINVAL;
    memcpy(dst, &v, sizeof v);
    return CEB_OK;
  }
  case CEB_CFG_DURATION: {
    int64_t v;
    if (ceb_parse_duration_ms(text, &v) != CEB_OK) return CEB_EINVAL;
    memcpy(dst, &v, sizeof v);
    return CEB_OK;
  }
  case CEB_CFG_BOOL: {
    int v;
    if (ceb_parse_bool(text, &v) != CEB_OK) return CEB_EINVAL;
    memcpy(dst, &v, sizeof v);
    return CEB_OK;
  }
  case CEB_CFG_SIZE: {
    uint64_t v;
    if (ceb_parse_size(text, &v) != CEB_OK) return CEB_EINVAL;
    memcpy(dst, &v, sizeof v);
    return CEB_OK;
  }
  case CEB_CFG_RATE: {
    double v;
    if (ceb_parse_rate(text, &v) != CEB_OK) return CEB_EINVAL;
    memcpy(dst, &v, sizeof v);
    return CEB_OK;
  }
  default:
    return CEB_EINVAL;
  }
}

/* The zero value of a field of spec type t. */
static void bind_zero(ceb_cfg_type t, void *dst) {
  switch (t) {
  case CEB_CFG_INT:
  case CEB_CFG_DURATION:
    memset(dst, 0, sizeof(int64_t));
    break;
  case CEB_CFG_BOOL:
    memset(dst, 0, sizeof(int));
    break;
  case CEB_CFG_SIZE:
    memset(dst, 0, sizeof(uint64_t));
    break;
  case CEB_CFG_RATE: {
    double z = 0;
    memcpy(dst, &z, sizeof z);
    break;
  }
  default:
    memset(dst, 0, sizeof(const char *));
    break;
  }
}

static void bind_one(const ceb_config *cfg, const ceb_config_spec *sp,
                     const char *key, void *dst) {
  if (sp->type == CEB_CFG_LIST) {
    ceb_config_items it;
    it.count = ceb_config_list(cfg, key, &it.items);
    memcpy(dst, &it, sizeof it);
    return;
  }
  const char *text = ceb_config_str(cfg, key); /* value, else default */
  switch (sp->type) {
  case CEB_CFG_INT:
  case CEB_CFG_DURATION:
  case CEB_CFG_BOOL:
  case CEB_CFG_SIZE:
  case CEB_CFG_RATE:
    /* Same fallbacks as the getters: a value that does not parse (already
     * reported by the checker) reads as the default. */
    if (text && bind_parse(sp->type, text, dst) == CEB_OK) return;
    if (sp->default_value &&
        bind_parse(sp->type, sp->default_value, dst) == CEB_OK)
      return;
    bind_zero(sp->type, dst);
    return;
  default:
    memcpy(dst, &text, sizeof text);
    return;
  }
}

int ceb_config_bind(const ceb_config *cfg, const ceb_config_binding *bindings,
                    void *base, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!cfg || !bindings || !base) {
    if (err && errlen) snprintf(err, errlen, "bind: no config, table or base");
    return CEB_EINVAL;
  }
  for (const ceb_config_binding *b = bindings; b->key; b++) {
    char *dst = (char *)base + b->offset;
    const ceb_config_spec *sp = cebi_config_spec_of(cfg, b->key);
    if (!sp || (sp->flags & CEB_CFG_PREFIX) || b->what > CEB_BIND_ORIGIN) {
      if (err && errlen)
        snprintf(err, errlen, "bind: '%s' is %s", b->key,
                 !sp                         ? "not a key of the section's spec"
                 : b->what > CEB_BIND_ORIGIN ? "bound as an unknown kind"
                                             : "a prefix, not a key");
      return CEB_EINVAL;
    }
    if (b->what == CEB_BIND_ORIGIN) {
      const char *o = ceb_config_origin(cfg, b->key);
      memcpy(dst, &o, sizeof o);
    } else {
      bind_one(cfg, sp, b->key, dst);
    }
  }
  return CEB_OK;
}
