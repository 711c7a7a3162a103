#include "http_jwt.h"

#include "http_in_util.h"
#include "http_jws.h"

#include <ceb/ceb.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define JWT_MAX_LEN 8192

static int fail(http_jwt_result *res, int status, const char *reason,
                const char *detail) {
  res->http_status = status;
  res->reason = reason;
  res->oauth_error = status == 403 ? "insufficient_scope" : "invalid_token";
  snprintf(res->detail, sizeof res->detail, "%s", detail);
  return status == 403 ? CEB_EFORBIDDEN : CEB_EAUTH;
}

static json_t *segment_json(const char *seg, size_t len) {
  unsigned char *raw = NULL;
  size_t raw_len = 0;
  if (http_b64url_decode(seg, len, &raw, &raw_len) != CEB_OK) return NULL;
  json_t *j =
      json_loadb((const char *)raw, raw_len, JSON_REJECT_DUPLICATES, NULL);
  free(raw);
  if (j && !json_is_object(j)) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* RFC 7515 4.1.9: typ is a media type, compared case-insensitively, with
 * "application/" implied when it holds no '/'. Accepted: a JWT (RFC 7519)
 * and an OAuth 2.0 access token (RFC 9068 "at+jwt"); absent is a JWT. */
static int typ_ok(json_t *typ) {
  if (!typ) return 1;
  const char *t = json_string_value(typ);
  if (!t) return 0;
  if (strncasecmp(t, "application/", 12) == 0)
    t += 12;
  else if (strchr(t, '/'))
    return 0;
  return strcasecmp(t, "jwt") == 0 || strcasecmp(t, "at+jwt") == 0;
}

/* A NumericDate claim in ms; 0 absent, -1 present but not a number. */
static int numeric_date(json_t *claims, const char *name, int64_t *ms) {
  json_t *v = json_object_get(claims, name);
  if (!v) return 0;
  if (!json_is_number(v)) return -1;
  double s = json_number_value(v);
  if (s < 0 || s > 1e13) return -1;
  *ms = (int64_t)(s * 1000.0);
  return 1;
}

static int audience_ok(json_t *aud, const char *want) {
  if (json_is_string(aud)) return strcmp(json_string_value(aud), want) == 0;
  if (json_is_array(aud)) {
    size_t i;
    json_t *v;
    json_array_foreach(aud, i, v) {
      if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
        return 1;
    }
  }
  return 0;
}

static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; *p;) {
    while (*p == ' ')
      p++;
    const char *e = p;
    while (*e && *e != ' ')
      e++;
    if ((size_t)(e - p) == n && n > 0 && memcmp(p, word, n) == 0) return 1;
    p = e;
  }
  return 0;
}

static int scope_present(json_t *claims, const char *scope) {
  json_t *s = json_object_get(claims, "scope");
  if (json_is_string(s) && has_word(json_string_value(s), scope)) return 1;
  json_t *scp = json_object_get(claims, "scp");
  if (json_is_string(scp)) return has_word(json_string_value(scp), scope);
  if (json_is_array(scp)) {
    size_t i;
    json_t *v;
    json_array_foreach(scp, i, v) {
      if (json_is_string(v) && strcmp(json_string_value(v), scope) == 0)
        return 1;
    }
  }
  return 0;
}

static int check_claims(const http_jwt_rules *rules, json_t *claims,
                        int64_t now_ms, http_jwt_result *res) {
  int64_t exp = 0, nbf = 0;
  int has = numeric_date(claims, "exp", &exp);
  if (has <= 0)
    return fail(res, 401, "exp", "the token has no valid exp claim");
  if (now_ms > exp + rules->leeway_ms)
    return fail(res, 401, "expired", "the token has expired");
  has = numeric_date(claims, "nbf", &nbf);
  if (has < 0)
    return fail(res, 401, "nbf", "the token's nbf claim is not a number");
  if (has > 0 && now_ms + rules->leeway_ms < nbf)
    return fail(res, 401, "not_yet_valid", "the token is not valid yet");
  if (rules->issuer) {
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    if (!iss || strcmp(iss, rules->issuer) != 0)
      return fail(res, 401, "issuer", "the token's issuer is not trusted");
  }
  if (rules->audience &&
      !audience_ok(json_object_get(claims, "aud"), rules->audience))
    return fail(res, 401, "audience",
                "the token is not meant for this audience");
  for (size_t i = 0; i < rules->nscopes; i++)
    if (!scope_present(claims, rules->scopes[i])) {
      char d[160];
      snprintf(d, sizeof d, "the token lacks the required scope %.100s",
               rules->scopes[i]);
      return fail(res, 403, "scope", d);
    }
  const char *client = NULL;
  if (rules->client_claim) {
    client = json_string_value(json_object_get(claims, rules->client_claim));
  } else {
    client = json_string_value(json_object_get(claims, "client_id"));
    if (!client) client = json_string_value(json_object_get(claims, "sub"));
  }
  if (!client || !*client || strlen(client) >= sizeof res->client)
    return fail(res, 401, "client", "the token names no client");
  snprintf(res->client, sizeof res->client, "%s", client);
  return CEB_OK;
}

/* gen: NULL with block set waits for a refresh (http_jwks_get); not NULL
 * may give HTTP_JWKS_PENDING; NULL without block takes the keys as they are. */
static int verify(http_jwks *keys, const http_jwt_rules *rules,
                  const char *token, int64_t now_ms, http_jwt_result *res,
                  int block, uint64_t *gen) {
  memset(res, 0, sizeof *res);
  size_t len = token ? strlen(token) : 0;
  if (len == 0) return fail(res, 401, "missing", "a bearer token is required");
  if (len > JWT_MAX_LEN)
    return fail(res, 401, "malformed", "the token is too long");
  const char *d1 = strchr(token, '.');
  const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  if (!d1 || !d2 || strchr(d2 + 1, '.'))
    return fail(res, 401, "malformed", "the token is not a signed JWT");
  json_t *header = segment_json(token, (size_t)(d1 - token));
  json_t *claims = segment_json(d1 + 1, (size_t)(d2 - d1 - 1));
  int st;
  char *pem = NULL;
  if (!header || !claims) {
    st = fail(res, 401, "malformed",
              "the token's header or claims are not "
              "base64url JSON objects");
    goto out;
  }
  const char *alg = json_string_value(json_object_get(header, "alg"));
  const char *kid = json_string_value(json_object_get(header, "kid"));
  if (!alg || strcasecmp(alg, "none") == 0) {
    st = fail(res, 401, "alg_none", "unsigned tokens are not accepted");
    goto out;
  }
  if (json_object_get(header, "crit")) {
    st = fail(res, 401, "crit", "the token has critical header parameters");
    goto out;
  }
  if (!typ_ok(json_object_get(header, "typ"))) {
    st = fail(res, 401, "typ",
              "the token's typ is not a JWT or an OAuth 2.0 access token "
              "(JWT, at+jwt)");
    goto out;
  }
  if (d2[1] == '\0') {
    st = fail(res, 401, "malformed", "the token has no signature");
    goto out;
  }
  if (!kid || !*kid) {
    st = fail(res, 401, "kid_missing", "the token header has no kid");
    goto out;
  }
  http_jwk_alg key_alg;
  int found = block ? http_jwks_get(keys, kid, now_ms, &pem, &key_alg)
                    : http_jwks_find(keys, kid, now_ms, &pem, &key_alg, gen);
  if (found != CEB_OK) {
    st = fail(res, 401, "kid_unknown", "the token's kid is not a known key");
    if (found == HTTP_JWKS_PENDING) st = HTTP_JWKS_PENDING;
    goto out;
  }
  if (strcmp(alg, http_jwk_alg_name(key_alg)) != 0) {
    st = fail(res, 401, "alg_mismatch",
              "the token's alg is not the algorithm of its key");
    goto out;
  }
  if (!http_jws_verify(pem, key_alg, token, (size_t)(d2 - token), d2 + 1,
                       strlen(d2 + 1))) {
    st = fail(res, 401, "signature", "the token's signature is invalid");
    goto out;
  }
  st = check_claims(rules, claims, now_ms, res);
out:
  free(pem);
  json_decref(header);
  json_decref(claims);
  return st;
}

int http_jwt_verify(http_jwks *keys, const http_jwt_rules *rules,
                    const char *token, int64_t now_ms, http_jwt_result *res) {
  return verify(keys, rules, token, now_ms, res, 1, NULL);
}

int http_jwt_verify_async(http_jwks *keys, const http_jwt_rules *rules,
                          const char *token, int64_t now_ms,
                          http_jwt_result *res, uint64_t *gen) {
  return verify(keys, rules, token, now_ms, res, 0, gen);
}
