/* Gherkin subset reader (see gherkin.h). */
#include "gherkin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
               s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

static int parse_row(char *line, gk_table *t) {
  if (t->rows == GK_MAX_ROWS) return -1;
  size_t c = 0;
  char *p = line + 1; /* after the leading '|' */
  char *bar;
  while ((bar = strchr(p, '|')) != NULL) {
    if (c == GK_MAX_CELLS) return -1;
    *bar = '\0';
    t->cell[t->rows][c++] = strdup(trim(p));
    p = bar + 1;
  }
  if (t->rows == 0)
    t->cols = c;
  else if (c != t->cols)
    return -1;
  t->rows++;
  return 0;
}

static char *step_text(char *line) {
  static const char *const kw[] = {"Given ", "When ", "Then ", "And ", "But "};
  for (size_t i = 0; i < 5; i++)
    if (!strncmp(line, kw[i], strlen(kw[i]))) return line + strlen(kw[i]);
  return NULL;
}

/* Next line of buf (without its '\n', which is overwritten), or NULL. */
static char *next_line(char **cursor) {
  char *l = *cursor;
  if (!l || !*l) return NULL;
  char *nl = strchr(l, '\n');
  if (nl) {
    *nl = '\0';
    *cursor = nl + 1;
  } else {
    *cursor = l + strlen(l);
  }
  return l;
}

static int is_doc_marker(const char *l) {
  while (*l == ' ' || *l == '\t')
    l++;
  return !strncmp(l, "\"\"\"", 3);
}

/* Reads doc string lines up to the closing marker, dedented by `indent`. */
static char *read_doc(char **cursor, size_t indent) {
  size_t cap = 256, n = 0;
  char *doc = malloc(cap), *l;
  doc[0] = '\0';
  while ((l = next_line(cursor)) != NULL && !is_doc_marker(l)) {
    size_t skip = 0;
    while (skip < indent && (l[skip] == ' ' || l[skip] == '\t'))
      skip++;
    size_t ln = strlen(l + skip);
    if (ln && l[skip + ln - 1] == '\r') ln--;
    while (n + ln + 2 > cap)
      doc = realloc(doc, cap *= 2);
    memcpy(doc + n, l + skip, ln);
    n += ln;
    doc[n++] = '\n';
    doc[n] = '\0';
  }
  if (n) /* no newline after the last line */
    doc[--n] = '\0';
  return doc;
}

int gk_parse_file(const char *path, gk_feature *out) {
  memset(out, 0, sizeof *out);
  size_t len;
  char *buf = ceb_test_read_file(path, &len);
  if (!buf) {
    fprintf(stderr, "%s: cannot read\n", path);
    return -1;
  }
  gk_scenario *sc = NULL;
  gk_table *table = NULL; /* table being filled */
  int lineno = 0, rc = 0;
  char *cursor = buf, *raw;
  while (rc == 0 && (raw = next_line(&cursor)) != NULL) {
    lineno++;
    char *line = trim(raw);
    if (!strncmp(line, "\"\"\"", 3)) {
      char *doc = read_doc(&cursor, (size_t)(line - raw));
      if (!sc || !sc->steps || sc->step[sc->steps - 1].doc) {
        free(doc);
        rc = -1;
      } else {
        sc->step[sc->steps - 1].doc = doc;
      }
      continue;
    }
    if (line[0] == '|') {
      if (!table || parse_row(line, table) != 0) rc = -1;
      continue;
    }
    table = NULL;
    if (!strncmp(line, "Scenario", 8)) {
      if (out->count == GK_MAX_SCENARIOS) {
        rc = -1;
        break;
      }
      sc = &out->scenario[out->count++];
      char *colon = strchr(line, ':');
      sc->title = strdup(colon ? trim(colon + 1) : line);
    } else if (!strncmp(line, "Examples:", 9) && sc) {
      table = &sc->examples;
    } else if (sc && step_text(line)) {
      if (sc->steps == GK_MAX_STEPS) {
        rc = -1;
        break;
      }
      gk_step *st = &sc->step[sc->steps++];
      st->text = strdup(step_text(line));
      table = &st->table;
    }
  }
  if (rc != 0) {
    fprintf(stderr, "%s:%d: unsupported Gherkin\n", path, lineno);
    gk_free(out);
  }
  free(buf);
  return rc;
}

static void table_free(gk_table *t) {
  for (size_t r = 0; r < t->rows; r++)
    for (size_t c = 0; c < t->cols; c++)
      free(t->cell[r][c]);
  t->rows = 0;
}

void gk_free(gk_feature *f) {
  for (size_t i = 0; i < f->count; i++) {
    gk_scenario *s = &f->scenario[i];
    free(s->title);
    for (size_t k = 0; k < s->steps; k++) {
      free(s->step[k].text);
      free(s->step[k].doc);
      table_free(&s->step[k].table);
    }
    table_free(&s->examples);
  }
  f->count = 0;
}

char *gk_expand(const char *text, const gk_table *ex, size_t row) {
  size_t cap = strlen(text) + 1, n = 0;
  char *out = malloc(cap);
  for (const char *p = text; *p;) {
    const char *value = NULL;
    size_t skip = 1;
    if (*p == '<' && ex && row < ex->rows) {
      const char *end = strchr(p, '>');
      for (size_t c = 0; end && c < ex->cols; c++)
        if (strlen(ex->cell[0][c]) == (size_t)(end - p - 1) &&
            !strncmp(ex->cell[0][c], p + 1, (size_t)(end - p - 1))) {
          value = ex->cell[row][c];
          skip = (size_t)(end - p) + 1;
        }
    }
    size_t add = value ? strlen(value) : 1;
    while (n + add + 1 > cap)
      out = realloc(out, cap *= 2);
    memcpy(out + n, value ? value : p, add);
    n += add;
    p += skip;
  }
  out[n] = '\0';
  return out;
}

const gk_step *gk_find_step(const gk_scenario *s, const char *prefix) {
  for (size_t i = 0; i < s->steps; i++)
    if (!strncmp(s->step[i].text, prefix, strlen(prefix))) return &s->step[i];
  return NULL;
}
