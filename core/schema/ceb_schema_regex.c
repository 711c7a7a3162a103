/* "pattern" / "patternProperties" regular expressions: ECMA-262 flavoured
 * patterns compiled with PCRE2 in UTF mode. Differences handled: "$" only
 * matches at the very end, \uXXXX and \u{X} escapes, \d and \w stay ASCII,
 * \s/\S cover the Unicode white space ECMA-262 defines. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "schema/ceb_schema_int.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Backtracking budget per match: a pathological pattern such as (a+)+$
 * fails the match (the value is reported invalid) instead of pinning a
 * core. Generous for ordinary patterns. */
#define CEBS_REGEX_MATCH_LIMIT 1000000
#define CEBS_REGEX_DEPTH_LIMIT 10000

struct cebs_regex {
  pcre2_code *code;
  pcre2_match_context *mctx; /* limits only; read-only once set */
};

/* ECMA-262 WhiteSpace and LineTerminator, in PCRE2_ALT_BSUX spelling */
#define ECMA_SPACE                                                             \
  "\\t\\n\\u000B\\f\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029"            \
  "\\u202F\\u205F\\u3000\\uFEFF"

/* ECMA-262 long General_Category names PCRE2 10.42 does not know. */
static const char *const gc_names[][2] = {
    {"Letter", "L"},
    {"Cased_Letter", "L&"},
    {"Uppercase_Letter", "Lu"},
    {"Lowercase_Letter", "Ll"},
    {"Titlecase_Letter", "Lt"},
    {"Modifier_Letter", "Lm"},
    {"Other_Letter", "Lo"},
    {"Mark", "M"},
    {"Nonspacing_Mark", "Mn"},
    {"Spacing_Mark", "Mc"},
    {"Enclosing_Mark", "Me"},
    {"Number", "N"},
    {"Decimal_Number", "Nd"},
    {"digit", "Nd"},
    {"Letter_Number", "Nl"},
    {"Other_Number", "No"},
    {"Punctuation", "P"},
    {"punct", "P"},
    {"Connector_Punctuation", "Pc"},
    {"Dash_Punctuation", "Pd"},
    {"Open_Punctuation", "Ps"},
    {"Close_Punctuation", "Pe"},
    {"Initial_Punctuation", "Pi"},
    {"Final_Punctuation", "Pf"},
    {"Other_Punctuation", "Po"},
    {"Symbol", "S"},
    {"Math_Symbol", "Sm"},
    {"Currency_Symbol", "Sc"},
    {"Modifier_Symbol", "Sk"},
    {"Other_Symbol", "So"},
    {"Separator", "Z"},
    {"Space_Separator", "Zs"},
    {"Line_Separator", "Zl"},
    {"Paragraph_Separator", "Zp"},
    {"Other", "C"},
    {"Control", "Cc"},
    {"cntrl", "Cc"},
    {"Format", "Cf"},
    {"Surrogate", "Cs"},
    {"Private_Use", "Co"},
    {"Unassigned", "Cn"},
};

/* Writes the PCRE2 spelling of the \p{...} body p[0..n) into out. */
static size_t map_property(const char *p, size_t n, char *out) {
  static const char *const prefixes[] = {
      "General_Category=",  "gc=", "Script=", "sc=",
      "Script_Extensions=", "scx="};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
    size_t pl = strlen(prefixes[i]);
    if (n > pl && strncmp(p, prefixes[i], pl) == 0) {
      p += pl;
      n -= pl;
      break;
    }
  }
  for (size_t i = 0; i < sizeof gc_names / sizeof *gc_names; i++) {
    if (strlen(gc_names[i][0]) == n && strncmp(p, gc_names[i][0], n) == 0) {
      size_t l = strlen(gc_names[i][1]);
      memcpy(out, gc_names[i][1], l);
      return l;
    }
  }
  memcpy(out, p, n);
  return n;
}

/* Letters that may follow a backslash in an ECMA-262 pattern with the "u"
 * flag; any other letter escape is a syntax error there (PCRE2 would accept
 * \a, \e, \z, \A, \Q... with other meanings). */
static bool ecma_letter_escape(char e) {
  return strchr("bBdDsSwWfnrtvcxupPk", e) != NULL;
}

/* Translates an ECMA-262 pattern into PCRE2 syntax: \s and \S become
 * explicit ECMA white space classes, \v is U+000B, [] and [^] match nothing
 * and anything, long Unicode property names are shortened. Syntax ECMA-262
 * rejects ((?P<n>, (?#, inline flags, unknown letter escapes) is an error.
 * Returns a malloc'd pattern, or NULL with err set. */
static char *ecma_translate(const char *p, char *err, size_t errlen) {
  size_t n = strlen(p), len = 0, extra = 0;
  for (size_t i = 0; i < n; i++)
    extra += p[i] == '\\' ? sizeof(ECMA_SPACE) + 8 : p[i] == '[' ? 4 : 0;
  char *out = malloc(n + extra + 1);
  if (!out) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  bool in_class = false;
  for (size_t i = 0; i < n; i++) {
    char ch = p[i];
    if (ch == '\\' && i + 1 < n) {
      char e = p[i + 1];
      if (((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) &&
          !ecma_letter_escape(e)) {
        snprintf(err, errlen, "\\%c is not an ECMA-262 escape", e);
        free(out);
        return NULL;
      }
      const char *rep = NULL;
      if (e == 's')
        rep = in_class ? ECMA_SPACE : "[" ECMA_SPACE "]";
      else if (e == 'S' && !in_class)
        rep = "[^" ECMA_SPACE "]";
      else if (e == 'v')
        rep = "\\x0B";
      if ((e == 'p' || e == 'P') && i + 2 < n && p[i + 2] == '{') {
        const char *close = strchr(p + i + 3, '}');
        if (close) {
          out[len++] = '\\';
          out[len++] = e;
          out[len++] = '{';
          len +=
              map_property(p + i + 3, (size_t)(close - (p + i + 3)), out + len);
          out[len++] = '}';
          i = (size_t)(close - p);
          continue;
        }
      }
      if (rep) {
        memcpy(out + len, rep, strlen(rep));
        len += strlen(rep);
      } else {
        out[len++] = ch;
        out[len++] = e;
      }
      i++;
      continue;
    }
    if (!in_class && ch == '(' && p[i + 1] == '?') {
      char g = p[i + 2];
      bool ok =
          g == ':' || g == '=' || g == '!' || (g == '<' && p[i + 3] != '\0');
      if (!ok) {
        snprintf(err, errlen, "group \"(?%c\" is not ECMA-262 syntax",
                 g ? g : ' ');
        free(out);
        return NULL;
      }
    }
    if (!in_class && ch == '[') {
      const char *rep = strncmp(p + i, "[]", 2) == 0    ? "(?!)"
                        : strncmp(p + i, "[^]", 3) == 0 ? "[\\s\\S]"
                                                        : NULL;
      if (rep) {
        memcpy(out + len, rep, strlen(rep));
        len += strlen(rep);
        i += p[i + 1] == ']' ? 1 : 2;
        continue;
      }
      in_class = true;
      /* a leading ']' (or '^]') is a literal in PCRE2 only */
    } else if (ch == ']' && in_class) {
      in_class = false;
    }
    out[len++] = ch;
  }
  out[len] = '\0';
  return out;
}

cebs_regex *cebs_regex_compile(const char *pattern, char *err, size_t errlen) {
  char tmsg[128];
  char *src = ecma_translate(pattern, tmsg, sizeof tmsg);
  if (!src) {
    snprintf(err, errlen, "invalid regular expression \"%.64s\": %s", pattern,
             tmsg);
    return NULL;
  }
  pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
  if (!cc) {
    free(src);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
  int ec;
  PCRE2_SIZE off;
  pcre2_code *code = pcre2_compile(
      (PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED,
      PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX, &ec, &off, cc);
  pcre2_compile_context_free(cc);
  free(src);
  if (!code) {
    PCRE2_UCHAR msg[128];
    pcre2_get_error_message(ec, msg, sizeof msg);
    snprintf(err, errlen, "invalid regular expression \"%.64s\": %s", pattern,
             (char *)msg);
    return NULL;
  }
  cebs_regex *re = malloc(sizeof *re);
  pcre2_match_context *mctx = pcre2_match_context_create(NULL);
  if (!re || !mctx) {
    free(re);
    pcre2_match_context_free(mctx);
    pcre2_code_free(code);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pcre2_set_match_limit(mctx, CEBS_REGEX_MATCH_LIMIT);
  pcre2_set_depth_limit(mctx, CEBS_REGEX_DEPTH_LIMIT);
  re->code = code;
  re->mctx = mctx;
  return re;
}

int cebs_regex_search(const cebs_regex *re, const char *s, size_t len) {
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
  if (!md) return -1;
  int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, md, re->mctx);
  pcre2_match_data_free(md);
  if (rc >= 0) return 1;
  return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}

void cebs_regex_free(cebs_regex *re) {
  if (!re) return;
  pcre2_code_free(re->code);
  pcre2_match_context_free(re->mctx);
  free(re);
}
