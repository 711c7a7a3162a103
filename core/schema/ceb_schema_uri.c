/* URI reference resolution (RFC 3986 section 5.2), fragments, percent
 * decoding and JSON Pointer (RFC 6901) lookups for $ref resolution. */
#include "schema/ceb_schema_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct uri_parts {
  const char *scheme, *auth, *path, *query, *frag;
  size_t lscheme, lauth, lpath, lquery, lfrag;
  bool has_scheme, has_auth, has_query, has_frag;
} uri_parts;

static void uri_parse(const char *s, uri_parts *u) {
  memset(u, 0, sizeof *u);
  const char *p = s;
  /* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
  if (isalpha((unsigned char)*p)) {
    const char *q = p + 1;
    while (isalnum((unsigned char)*q) || *q == '+' || *q == '-' || *q == '.')
      q++;
    if (*q == ':') {
      u->has_scheme = true;
      u->scheme = p;
      u->lscheme = (size_t)(q - p);
      p = q + 1;
    }
  }
  if (p[0] == '/' && p[1] == '/') {
    p += 2;
    u->has_auth = true;
    u->auth = p;
    u->lauth = strcspn(p, "/?#");
    p += u->lauth;
  }
  u->path = p;
  u->lpath = strcspn(p, "?#");
  p += u->lpath;
  if (*p == '?') {
    u->has_query = true;
    u->query = ++p;
    u->lquery = strcspn(p, "#");
    p += u->lquery;
  }
  if (*p == '#') {
    u->has_frag = true;
    u->frag = p + 1;
    u->lfrag = strlen(p + 1);
  }
}

/* remove_dot_segments (RFC 3986 5.2.4) on a NUL-terminated buffer. */
static void remove_dots(char *in) {
  char *out = in, *r = in;
  size_t olen = 0;
  while (*r) {
    if (strncmp(r, "../", 3) == 0) {
      r += 3;
    } else if (strncmp(r, "./", 2) == 0) {
      r += 2;
    } else if (strncmp(r, "/./", 3) == 0) {
      r += 2;
    } else if (strcmp(r, "/.") == 0) {
      r[1] = '\0';
    } else if (strncmp(r, "/../", 4) == 0 || strcmp(r, "/..") == 0) {
      if (r[3] == '\0')
        r[2] = '/', r += 2;
      else
        r += 3;
      while (olen > 0 && out[olen - 1] != '/')
        olen--;
      if (olen > 0) olen--;
    } else if (strcmp(r, ".") == 0 || strcmp(r, "..") == 0) {
      r += strlen(r);
    } else {
      size_t n = 1 + strcspn(r + 1, "/");
      memmove(out + olen, r, n);
      olen += n;
      r += n;
    }
  }
  out[olen] = '\0';
}

typedef struct sbuf {
  char *p;
  size_t len;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

char *cebs_uri_resolve(const char *base, const char *ref) {
  if (!base) base = "";
  uri_parts B, R;
  uri_parse(base, &B);
  uri_parse(ref, &R);
  size_t cap = strlen(base) + strlen(ref) + 8;
  sbuf out = {malloc(cap), 0};
  char *path = malloc(cap);
  if (!out.p || !path) {
    free(out.p);
    free(path);
    return NULL;
  }
  out.p[0] = path[0] = '\0';
  const uri_parts *auth, *query;
  const uri_parts *scheme = R.has_scheme ? &R : &B;
  if (R.has_scheme || R.has_auth) {
    auth = &R;
    query = &R;
    memcpy(path, R.path, R.lpath);
    path[R.lpath] = '\0';
    remove_dots(path);
  } else {
    auth = &B;
    if (R.lpath == 0) {
      memcpy(path, B.path, B.lpath);
      path[B.lpath] = '\0';
      query = R.has_query ? &R : &B;
    } else {
      query = &R;
      if (R.path[0] == '/') {
        memcpy(path, R.path, R.lpath);
        path[R.lpath] = '\0';
      } else {
        /* merge: base path up to its last '/', then the reference path */
        size_t keep = 0;
        if (B.has_auth && B.lpath == 0) {
          path[keep++] = '/';
        } else {
          for (size_t i = 0; i < B.lpath; i++)
            if (B.path[i] == '/') keep = i + 1;
          memcpy(path, B.path, keep);
        }
        memcpy(path + keep, R.path, R.lpath);
        path[keep + R.lpath] = '\0';
      }
      remove_dots(path);
    }
  }
  if (scheme->has_scheme) {
    sb_add(&out, scheme->scheme, scheme->lscheme);
    sb_add(&out, ":", 1);
  }
  if (auth->has_auth) {
    sb_add(&out, "//", 2);
    sb_add(&out, auth->auth, auth->lauth);
  }
  sb_add(&out, path, strlen(path));
  if (query->has_query) {
    sb_add(&out, "?", 1);
    sb_add(&out, query->query, query->lquery);
  }
  if (R.has_frag) {
    sb_add(&out, "#", 1);
    sb_add(&out, R.frag, R.lfrag);
  }
  free(path);
  return out.p;
}

char *cebs_uri_split(const char *uri, const char **frag) {
  const char *h = strchr(uri, '#');
  size_t n = h ? (size_t)(h - uri) : strlen(uri);
  *frag = h ? h + 1 : NULL;
  return strndup(uri, n);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = tolower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

char *cebs_pct_decode(const char *s) {
  size_t n = strlen(s);
  char *out = malloc(n + 1), *o = out;
  if (!out) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%') {
      int h = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
      int l = h >= 0 ? hexval((unsigned char)s[i + 2]) : -1;
      if (h < 0 || l < 0) {
        free(out);
        return NULL;
      }
      *o++ = (char)(h * 16 + l);
      i += 2;
    } else {
      *o++ = s[i];
    }
  }
  *o = '\0';
  return out;
}

json_t *cebs_json_pointer(json_t *doc, const char *ptr) {
  if (*ptr == '\0') return doc;
  if (*ptr != '/') return NULL;
  json_t *cur = doc;
  char tok[1024];
  const char *p = ptr;
  while (*p == '/' && cur) {
    p++;
    size_t n = 0;
    while (*p && *p != '/') {
      if (n + 1 >= sizeof tok) return NULL;
      if (*p == '~') {
        if (p[1] == '0')
          tok[n++] = '~';
        else if (p[1] == '1')
          tok[n++] = '/';
        else
          return NULL;
        p += 2;
      } else {
        tok[n++] = *p++;
      }
    }
    tok[n] = '\0';
    if (json_is_object(cur)) {
      cur = json_object_get(cur, tok);
    } else if (json_is_array(cur)) {
      char *end;
      if (n == 0 || (n > 1 && tok[0] == '0') || !isdigit((unsigned char)tok[0]))
        return NULL;
      unsigned long long idx = strtoull(tok, &end, 10);
      if (*end) return NULL;
      cur = idx < json_array_size(cur) ? json_array_get(cur, idx) : NULL;
    } else {
      return NULL;
    }
  }
  return cur;
}
