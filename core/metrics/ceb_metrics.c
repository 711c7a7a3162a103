#include "metrics/ceb_metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/ceb_metrics_help.h"

static const double k_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                   0.05,   0.1,   0.25,   0.5,   1,    2.5,
                                   5,      10,    30,     60};
#define NBUCKETS (sizeof k_buckets / sizeof k_buckets[0])

typedef struct series {
  struct series *next;
  char *labels;
  double value; /* counter/gauge; histogram: sum */
  unsigned long long count;
  unsigned long long *buckets;
} series;

typedef struct family {
  struct family *next;
  char *name;
  char *help;
  ceb_metric_type type;
  int declared;
  series *series;
} family;

struct ceb_metrics {
  pthread_mutex_t lock;
  family *families;  /* kept sorted by name for stable output */
  char *const_label; /* name="escaped value" (ceb_metrics_set_const_label) */
};

ceb_metrics *ceb_metrics_new(void) {
  ceb_metrics *m = calloc(1, sizeof *m);
  if (m) pthread_mutex_init(&m->lock, NULL);
  return m;
}

void ceb_metrics_free(ceb_metrics *m) {
  if (!m) return;
  for (family *f = m->families, *fn; f; f = fn) {
    fn = f->next;
    for (series *s = f->series, *sn; s; s = sn) {
      sn = s->next;
      free(s->labels);
      free(s->buckets);
      free(s);
    }
    free(f->name);
    free(f->help);
    free(f);
  }
  free(m->const_label);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

/* Caller holds the lock. */
static family *family_get(ceb_metrics *m, const char *name,
                          ceb_metric_type type) {
  family **pp = &m->families;
  while (*pp && strcmp((*pp)->name, name) < 0)
    pp = &(*pp)->next;
  if (*pp && strcmp((*pp)->name, name) == 0) return *pp;
  family *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->name = strdup(name);
  if (!f->name) {
    free(f);
    return NULL;
  }
  f->type = type;
  f->next = *pp;
  *pp = f;
  return f;
}

static series *series_get(family *f, const char *labels) {
  if (!labels) labels = "";
  series **pp = &f->series;
  while (*pp && strcmp((*pp)->labels, labels) < 0)
    pp = &(*pp)->next;
  if (*pp && strcmp((*pp)->labels, labels) == 0) return *pp;
  series *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->labels = strdup(labels);
  if (f->type == CEB_MT_HISTOGRAM)
    s->buckets = calloc(NBUCKETS, sizeof *s->buckets);
  if (!s->labels || (f->type == CEB_MT_HISTOGRAM && !s->buckets)) {
    free(s->labels);
    free(s->buckets);
    free(s);
    return NULL;
  }
  s->next = *pp;
  *pp = s;
  return s;
}

void ceb_metrics_declare(ceb_metrics *m, const char *name, ceb_metric_type type,
                         const char *help) {
  pthread_mutex_lock(&m->lock);
  family *f = family_get(m, name, type);
  if (f && !f->declared) {
    f->declared = 1;
    f->type = type;
    free(f->help);
    f->help = help ? strdup(help) : NULL;
  }
  pthread_mutex_unlock(&m->lock);
}

static void update(ceb_metrics *m, const char *name, const char *labels,
                   ceb_metric_type type, double v, int absolute) {
  if (!m || !name) return;
  pthread_mutex_lock(&m->lock);
  family *f = family_get(m, name, type);
  series *s = f ? series_get(f, labels) : NULL;
  if (s) {
    if (f->type == CEB_MT_COUNTER)
      s->value = absolute ? v : s->value + v;
    else if (f->type == CEB_MT_GAUGE)
      s->value = v;
    else if (s->buckets) {
      s->value += v;
      s->count++;
      for (size_t i = 0; i < NBUCKETS; i++)
        if (v <= k_buckets[i]) s->buckets[i]++;
    }
  }
  pthread_mutex_unlock(&m->lock);
}

void ceb_metrics_add(ceb_metrics *m, const char *name, const char *labels,
                     double value) {
  update(m, name, labels, CEB_MT_COUNTER, value, 0);
}
void ceb_metrics_set_total(ceb_metrics *m, const char *name, const char *labels,
                           double value) {
  update(m, name, labels, CEB_MT_COUNTER, value, 1);
}
void ceb_metrics_set(ceb_metrics *m, const char *name, const char *labels,
                     double value) {
  update(m, name, labels, CEB_MT_GAUGE, value, 0);
}
void ceb_metrics_observe(ceb_metrics *m, const char *name, const char *labels,
                         double seconds) {
  update(m, name, labels, CEB_MT_HISTOGRAM, seconds, 0);
}

void ceb_metrics_remove(ceb_metrics *m, const char *name, const char *labels) {
  if (!m || !name) return;
  if (!labels) labels = "";
  pthread_mutex_lock(&m->lock);
  for (family *f = m->families; f; f = f->next) {
    if (strcmp(f->name, name) != 0) continue;
    for (series **pp = &f->series; *pp; pp = &(*pp)->next) {
      if (strcmp((*pp)->labels, labels) != 0) continue;
      series *s = *pp;
      *pp = s->next;
      free(s->labels);
      free(s->buckets);
      free(s);
      break;
    }
  }
  pthread_mutex_unlock(&m->lock);
}

double ceb_metrics_get(ceb_metrics *m, const char *name, const char *labels) {
  double v = 0;
  if (!labels) labels = "";
  pthread_mutex_lock(&m->lock);
  for (family *f = m->families; f; f = f->next) {
    if (strcmp(f->name, name) != 0) continue;
    for (series *s = f->series; s; s = s->next)
      if (strcmp(s->labels, labels) == 0)
        v = f->type == CEB_MT_HISTOGRAM ? (double)s->count : s->value;
  }
  pthread_mutex_unlock(&m->lock);
  return v;
}

typedef struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = 1;
      return;
    }
    if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    size_t ncap = (b->cap + (size_t)n + 1) * 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

static const char *type_name(ceb_metric_type t) {
  return t == CEB_MT_COUNTER ? "counter"
         : t == CEB_MT_GAUGE ? "gauge"
                             : "histogram";
}

/* HELP text escaping of the exposition format: backslash and newline. */
static void sb_help(sbuf *b, const char *name, const char *help) {
  if (!strpbrk(help, "\\\n")) {
    sb_printf(b, "# HELP %s %s\n", name, help);
    return;
  }
  sb_printf(b, "# HELP %s ", name);
  for (const char *p = help; *p; p++) {
    if (*p == '\\')
      sb_printf(b, "\\\\");
    else if (*p == '\n')
      sb_printf(b, "\\n");
    else
      sb_printf(b, "%c", *p);
  }
  sb_printf(b, "\n");
}

int ceb_metrics_set_const_label(ceb_metrics *m, const char *name,
                                const char *value) {
  if (!m || !name || !*name) return -1;
  for (const char *p = name; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (p > name && *p >= '0' && *p <= '9')))
      return -1;
  char *l = NULL;
  if (value) {
    /* worst case every byte escaped */
    l = malloc(strlen(name) + 2 * strlen(value) + 4);
    if (!l) return -1;
    char *o = l + sprintf(l, "%s=\"", name);
    for (const char *p = value; *p; p++) {
      if (*p == '\\' || *p == '"') *o++ = '\\';
      if (*p == '\n') {
        *o++ = '\\';
        *o++ = 'n';
        continue;
      }
      *o++ = *p;
    }
    *o++ = '"';
    *o = '\0';
  }
  pthread_mutex_lock(&m->lock);
  free(m->const_label);
  m->const_label = l;
  pthread_mutex_unlock(&m->lock);
  return 0;
}

char *ceb_metrics_render(ceb_metrics *m) {
  sbuf b = {malloc(4096), 0, 4096, 0};
  if (!b.p) return NULL;
  b.p[0] = '\0';
  pthread_mutex_lock(&m->lock);
  for (family *f = m->families; f; f = f->next) {
    /* Every family gets HELP (Prometheus convention): declared text, else
     * the catalogue's, else a generic line. */
    const char *help = f->help ? f->help : ceb_metrics_known_help(f->name);
    sb_help(&b, f->name, help ? help : CEB_METRICS_HELP_UNKNOWN);
    sb_printf(&b, "# TYPE %s %s\n", f->name, type_name(f->type));
    for (series *s = f->series; s; s = s->next) {
      const char *l = s->labels;
      char *joined = NULL; /* the constant label first, then the series' */
      if (m->const_label) {
        size_t n = strlen(m->const_label) + strlen(l) + 2;
        joined = malloc(n);
        if (!joined) {
          b.oom = 1;
          break;
        }
        snprintf(joined, n, "%s%s%s", m->const_label, *l ? "," : "", l);
        l = joined;
      }
      if (f->type != CEB_MT_HISTOGRAM) {
        sb_printf(&b, "%s%s%s%s %.17g\n", f->name, *l ? "{" : "", l,
                  *l ? "}" : "", s->value);
        free(joined);
        continue;
      }
      for (size_t i = 0; i < NBUCKETS; i++)
        sb_printf(&b, "%s_bucket{%s%sle=\"%g\"} %llu\n", f->name, l,
                  *l ? "," : "", k_buckets[i], s->buckets[i]);
      sb_printf(&b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", f->name, l,
                *l ? "," : "", s->count);
      sb_printf(&b, "%s_sum%s%s%s %.17g\n", f->name, *l ? "{" : "", l,
                *l ? "}" : "", s->value);
      sb_printf(&b, "%s_count%s%s%s %llu\n", f->name, *l ? "{" : "", l,
                *l ? "}" : "", s->count);
      free(joined);
    }
  }
  pthread_mutex_unlock(&m->lock);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}
