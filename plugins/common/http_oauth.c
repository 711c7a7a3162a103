/* OAuth2 client credentials: request building, token caching and the
 * private_key_jwt client assertion. */
#include "http_oauth.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <jwt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <ceb/status.h>

/* A client assertion lives this long (RFC 7523 wants short-lived). */
#define ASSERTION_TTL_S 60
/* Without expires_in we assume a short life rather than forever. */
#define DEFAULT_EXPIRES_S 300
#define MAX_KEY_FILE (64 * 1024)

struct http_oauth_client {
  char *token_url;
  char *client_id;
  char *scope;
  char *audience;
  char *key_id;
  /* client_secret_basic: form-encoded credentials */
  char *basic_user;
  char *basic_password;
  /* private_key_jwt */
  unsigned char *key_pem;
  size_t key_pem_len;
  jwt_alg_t alg;
  int64_t margin_ms;
  /* cache */
  char *token;
  int64_t expires_ms;
  uint64_t generation;
};

static void set_err(char *err, size_t errlen, const char *msg) {
  if (err && errlen) snprintf(err, errlen, "%s", msg);
}

static void wipe_free(char *s) {
  if (s) {
    OPENSSL_cleanse(s, strlen(s));
    free(s);
  }
}

/* application/x-www-form-urlencoded value (RFC 6749 appendix B). */
static char *form_encode(const char *v) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(v);
  char *out = malloc(n * 3 + 1), *o = out;
  if (!out) return NULL;
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
    if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
        (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
        *p == '~') {
      *o++ = (char)*p;
    } else if (*p == ' ') {
      *o++ = '+';
    } else {
      *o++ = '%';
      *o++ = hex[*p >> 4];
      *o++ = hex[*p & 15];
    }
  }
  *o = '\0';
  return out;
}

/* Reads the PEM key and picks the algorithm from the key type. */
static int load_key(http_oauth_client *c, const char *path, char *err,
                    size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    set_err(err, errlen, "oauth2.private_key: cannot open the key file");
    return CEB_ECONFIG;
  }
  unsigned char *buf = malloc(MAX_KEY_FILE + 1);
  size_t n = buf ? fread(buf, 1, MAX_KEY_FILE + 1, f) : 0;
  fclose(f);
  if (!buf) return CEB_ENOMEM;
  if (n == 0 || n > MAX_KEY_FILE) {
    OPENSSL_cleanse(buf, MAX_KEY_FILE + 1);
    free(buf);
    set_err(err, errlen, "oauth2.private_key: empty or oversized key file");
    return CEB_ECONFIG;
  }
  buf[n] = '\0';
  BIO *bio = BIO_new_mem_buf(buf, (int)n);
  EVP_PKEY *pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
  BIO_free(bio);
  int rc = CEB_OK;
  if (!pkey) {
    set_err(err, errlen, "oauth2.private_key: not a PEM private key");
    rc = CEB_ECONFIG;
  } else if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_RSA) {
    if (EVP_PKEY_get_bits(pkey) < 2048) {
      set_err(err, errlen, "oauth2.private_key: RSA keys need >= 2048 bits");
      rc = CEB_ECONFIG;
    }
    c->alg = JWT_ALG_RS256;
  } else if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC &&
             EVP_PKEY_get_bits(pkey) == 256) {
    c->alg = JWT_ALG_ES256;
  } else {
    set_err(err, errlen,
            "oauth2.private_key: need an RSA (RS256) or P-256 (ES256) key");
    rc = CEB_ECONFIG;
  }
  EVP_PKEY_free(pkey);
  if (rc != CEB_OK) {
    OPENSSL_cleanse(buf, n);
    free(buf);
    return rc;
  }
  c->key_pem = buf;
  c->key_pem_len = n;
  return CEB_OK;
}

static char *dup_opt(const char *s, int *oom) {
  if (!s || !*s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = 1;
  return d;
}

int http_oauth_client_new(const http_oauth_config *cfg, http_oauth_client **out,
                          char *err, size_t errlen) {
  if (!out) return CEB_EINVAL;
  *out = NULL;
  if (!cfg || !cfg->token_url || !*cfg->token_url) {
    set_err(err, errlen, "oauth2.token_url is required");
    return CEB_ECONFIG;
  }
  if (!cfg->client_id || !*cfg->client_id) {
    set_err(err, errlen, "oauth2.client_id is required with oauth2.token_url");
    return CEB_ECONFIG;
  }
  int has_secret = cfg->client_secret && *cfg->client_secret;
  int has_key = cfg->private_key_path && *cfg->private_key_path;
  if (has_secret == has_key) {
    set_err(err, errlen,
            "set exactly one of oauth2.client_secret and oauth2.private_key");
    return CEB_ECONFIG;
  }
  http_oauth_client *c = calloc(1, sizeof(*c));
  if (!c) return CEB_ENOMEM;
  int oom = 0;
  c->token_url = dup_opt(cfg->token_url, &oom);
  c->client_id = dup_opt(cfg->client_id, &oom);
  c->scope = dup_opt(cfg->scope, &oom);
  c->audience = dup_opt(cfg->audience, &oom);
  c->key_id = dup_opt(cfg->key_id, &oom);
  c->margin_ms = cfg->refresh_margin_ms > 0 ? cfg->refresh_margin_ms : 0;
  if (has_secret && !oom) {
    c->basic_user = form_encode(cfg->client_id);
    c->basic_password = form_encode(cfg->client_secret);
    oom = !c->basic_user || !c->basic_password;
  }
  if (oom) {
    http_oauth_client_free(c);
    return CEB_ENOMEM;
  }
  if (has_key) {
    int rc = load_key(c, cfg->private_key_path, err, errlen);
    if (rc != CEB_OK) {
      http_oauth_client_free(c);
      return rc;
    }
  }
  *out = c;
  return CEB_OK;
}

void http_oauth_client_free(http_oauth_client *c) {
  if (!c) return;
  free(c->token_url);
  free(c->client_id);
  free(c->scope);
  free(c->audience);
  free(c->key_id);
  wipe_free(c->basic_user);
  wipe_free(c->basic_password);
  if (c->key_pem) {
    OPENSSL_cleanse(c->key_pem, c->key_pem_len);
    free(c->key_pem);
  }
  wipe_free(c->token);
  free(c);
}

const char *http_oauth_client_url(const http_oauth_client *c) {
  return c ? c->token_url : NULL;
}

const char *http_oauth_client_token(http_oauth_client *c, int64_t now_ms,
                                    uint64_t *generation) {
  if (!c || !c->token || now_ms >= c->expires_ms) return NULL;
  if (generation) *generation = c->generation;
  return c->token;
}

void http_oauth_client_invalidate(http_oauth_client *c, uint64_t generation) {
  if (c && c->token && c->generation == generation) {
    wipe_free(c->token);
    c->token = NULL;
  }
}

/* RFC 7523 section 3: iss = sub = client_id, aud = the token endpoint, a
 * unique jti, short exp. */
static char *make_assertion(http_oauth_client *c, int64_t now_ms) {
  jwt_t *jwt = NULL;
  char *out = NULL;
  unsigned char rnd[16];
  char jti[33];
  if (RAND_bytes(rnd, sizeof(rnd)) != 1) return NULL;
  for (size_t i = 0; i < sizeof(rnd); i++)
    snprintf(jti + 2 * i, 3, "%02x", rnd[i]);
  long now_s = (long)(now_ms / 1000);
  if (jwt_new(&jwt) != 0) return NULL;
  if (jwt_add_grant(jwt, "iss", c->client_id) == 0 &&
      jwt_add_grant(jwt, "sub", c->client_id) == 0 &&
      jwt_add_grant(jwt, "aud", c->token_url) == 0 &&
      jwt_add_grant(jwt, "jti", jti) == 0 &&
      jwt_add_grant_int(jwt, "iat", now_s) == 0 &&
      jwt_add_grant_int(jwt, "exp", now_s + ASSERTION_TTL_S) == 0 &&
      (!c->key_id || jwt_add_header(jwt, "kid", c->key_id) == 0) &&
      jwt_set_alg(jwt, c->alg, c->key_pem, (int)c->key_pem_len) == 0) {
    char *s = jwt_encode_str(jwt);
    if (s) {
      out = strdup(s);
      free(s);
    }
  }
  jwt_free(jwt);
  return out;
}

/* Appends "&name=value" (value form-encoded) to *buf. */
static int form_add(char **buf, size_t *len, const char *name,
                    const char *value) {
  char *enc = form_encode(value);
  if (!enc) return CEB_ENOMEM;
  size_t add = strlen(name) + strlen(enc) + 2;
  char *nb = realloc(*buf, *len + add + 1);
  if (!nb) {
    free(enc);
    return CEB_ENOMEM;
  }
  *buf = nb;
  *len += (size_t)snprintf(nb + *len, add + 1, "%s%s=%s", *len ? "&" : "", name,
                           enc);
  OPENSSL_cleanse(enc, strlen(enc));
  free(enc);
  return CEB_OK;
}

int http_oauth_client_request(http_oauth_client *c, int64_t now_ms, char **form,
                              const char **user, const char **password) {
  if (!c || !form || !user || !password) return CEB_EINVAL;
  *form = NULL;
  *user = c->basic_user;
  *password = c->basic_password;
  char *buf = NULL;
  size_t len = 0;
  int rc = form_add(&buf, &len, "grant_type", "client_credentials");
  if (rc == CEB_OK && c->scope) rc = form_add(&buf, &len, "scope", c->scope);
  if (rc == CEB_OK && c->audience)
    rc = form_add(&buf, &len, "audience", c->audience);
  if (rc == CEB_OK && c->key_pem) {
    char *assertion = make_assertion(c, now_ms);
    rc = assertion ? CEB_OK : CEB_EINTERNAL;
    if (rc == CEB_OK) rc = form_add(&buf, &len, "client_id", c->client_id);
    if (rc == CEB_OK)
      rc = form_add(&buf, &len, "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
    if (rc == CEB_OK) rc = form_add(&buf, &len, "client_assertion", assertion);
    free(assertion);
  }
  if (rc != CEB_OK) {
    free(buf);
    return rc;
  }
  *form = buf;
  return CEB_OK;
}

int http_oauth_client_complete(http_oauth_client *c, long http_status,
                               const char *body, size_t len, int64_t now_ms,
                               char *err, size_t errlen) {
  if (!c) return CEB_EINVAL;
  json_error_t jerr;
  json_t *doc = body && len ? json_loadb(body, len, 0, &jerr) : NULL;
  int rc = CEB_OK;
  if (http_status < 200 || http_status > 299) {
    const char *code = json_string_value(json_object_get(doc, "error"));
    char msg[160];
    snprintf(msg, sizeof(msg), "token endpoint answered %ld%s%s", http_status,
             code ? ": " : "", code ? code : "");
    set_err(err, errlen, msg);
    rc = http_status >= 400 && http_status < 500 ? CEB_EAUTH : CEB_EIO;
    goto done;
  }
  const char *token = json_string_value(json_object_get(doc, "access_token"));
  const char *type = json_string_value(json_object_get(doc, "token_type"));
  json_t *exp = json_object_get(doc, "expires_in");
  if (!doc || !token || !*token || strpbrk(token, "\r\n ")) {
    set_err(err, errlen, "token response without a usable access_token");
    rc = CEB_EIO;
    goto done;
  }
  if (type && strcasecmp(type, "Bearer") != 0) {
    set_err(err, errlen, "token_type is not Bearer");
    rc = CEB_EIO;
    goto done;
  }
  int64_t life_s = DEFAULT_EXPIRES_S;
  if (json_is_integer(exp) && json_integer_value(exp) > 0)
    life_s = json_integer_value(exp);
  else if (json_is_string(exp) && atoll(json_string_value(exp)) > 0)
    life_s = atoll(json_string_value(exp));
  /* Refresh `margin` early, but never spend more than half the life. */
  int64_t life_ms = life_s * 1000;
  int64_t margin = c->margin_ms < life_ms / 2 ? c->margin_ms : life_ms / 2;
  char *copy = strdup(token);
  if (!copy) {
    rc = CEB_ENOMEM;
    goto done;
  }
  wipe_free(c->token);
  c->token = copy;
  c->expires_ms = now_ms + life_ms - margin;
  c->generation++;
done:
  json_decref(doc);
  return rc;
}
