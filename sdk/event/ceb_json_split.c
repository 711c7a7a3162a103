/* Finds the top-level "data" member of a JSON object text, so that the
 * decoder can parse the (small) attributes with jansson and take the data
 * value's bytes as they are, instead of building a tree of the data and
 * dumping it back to text.
 *
 * The scanner only delimits: strings (with escapes) and balanced brackets.
 * It is strict about the object's own punctuation and gives up (returns 0)
 * on anything it does not expect; the caller then parses the whole text
 * with jansson, which also produces the error message for bad input. What
 * it delimits is validated by jansson afterwards: the attributes text as a
 * whole and, for untrusted input, the data value on its own. */
#include "ceb_event_internal.h"

#include <string.h>

#define MAX_DEPTH 256 /* deeper data falls back to the full parse */

static size_t skip_ws(const char *s, size_t i, size_t n) {
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
    i++;
  return i;
}

/* s[i] is '"': index after the closing quote, 0 when unterminated. Sets
 * *escaped when the string holds a backslash. */
static size_t skip_string(const char *s, size_t i, size_t n, int *escaped) {
  for (i++; i < n; i++) {
    if (s[i] == '\\') {
      if (escaped) *escaped = 1;
      i++;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return 0;
}

/* Index after the value starting at s[i], 0 when it cannot be delimited. */
static size_t skip_value(const char *s, size_t i, size_t n) {
  if (i >= n) return 0;
  if (s[i] == '"') return skip_string(s, i, n, NULL);
  if (s[i] == '{' || s[i] == '[') {
    char stack[MAX_DEPTH];
    size_t depth = 0;
    for (; i < n; i++) {
      char c = s[i];
      if (c == '"') {
        size_t e = skip_string(s, i, n, NULL);
        if (!e) return 0;
        i = e - 1;
      } else if (c == '{' || c == '[') {
        if (depth == MAX_DEPTH) return 0;
        stack[depth++] = c == '{' ? '}' : ']';
      } else if (c == '}' || c == ']') {
        if (depth == 0 || stack[depth - 1] != c) return 0;
        if (--depth == 0) return i + 1;
      }
    }
    return 0;
  }
  /* a scalar: everything up to the next delimiter */
  size_t start = i;
  while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' &&
         s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
    i++;
  return i > start ? i : 0;
}

int cebi_json_split_data(const char *s, size_t n, cebi_json_split *out) {
  memset(out, 0, sizeof *out);
  size_t i = skip_ws(s, 0, n);
  if (i >= n || s[i] != '{') return 0;
  size_t prev_comma = 0; /* the comma before the current member; 0 = none */
  int found = 0;
  i = skip_ws(s, i + 1, n);
  if (i < n && s[i] == '}') return 0; /* {} has no data */
  for (;;) {
    if (i >= n || s[i] != '"') return 0;
    size_t key = i;
    int escaped = 0;
    size_t key_end = skip_string(s, i, n, &escaped);
    if (!key_end || escaped) return 0; /* an escaped key may spell "data" */
    i = skip_ws(s, key_end, n);
    if (i >= n || s[i] != ':') return 0;
    size_t vs = skip_ws(s, i + 1, n);
    size_t ve = skip_value(s, vs, n);
    if (!ve) return 0;
    int is_data = key_end - key == 6 && memcmp(s + key + 1, "data", 4) == 0;
    if (is_data) {
      if (found) return 0; /* a duplicate: jansson reports it */
      found = 1;
      out->value_start = vs;
      out->value_end = ve;
      /* cut the preceding comma with the member, or else the next one */
      out->cut_start = prev_comma ? prev_comma : key;
      out->cut_end = ve;
    }
    i = skip_ws(s, ve, n);
    if (i < n && s[i] == ',') {
      if (is_data && !prev_comma) out->cut_end = i + 1;
      prev_comma = i;
      i = skip_ws(s, i + 1, n);
      continue;
    }
    if (i < n && s[i] == '}') break;
    return 0;
  }
  if (skip_ws(s, i + 1, n) != n) return 0; /* trailing bytes */
  return found;
}
