/* Standard Webhooks v1 signing and verification on OpenSSL HMAC-SHA256. */
#include "http_webhook_sig.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <ceb/status.h>

#define SIG_PREFIX "whsec_"
#define SIG_LEN 32 /* SHA-256 */
/* "v1," + base64 of 32 bytes (44 chars) */
#define SIG_TEXT_MAX (3 + 44)

typedef struct webhook_key {
  unsigned char *bytes;
  size_t len;
} webhook_key;

struct http_webhook_keys {
  size_t count;
  webhook_key keys[];
};

int http_webhook_secret_parse(const char *secret, unsigned char **key,
                              size_t *key_len) {
  if (!key || !key_len) return CEB_EINVAL;
  *key = NULL;
  *key_len = 0;
  if (!secret) return CEB_EINVAL;
  if (strncmp(secret, SIG_PREFIX, strlen(SIG_PREFIX)) == 0)
    secret += strlen(SIG_PREFIX);
  size_t n = strlen(secret);
  if (n == 0 || n > 4096) return CEB_EINVAL;
  /* Restore missing padding, as the Python reference does; a remainder of 1
   * can never be valid base64. */
  if (n % 4 == 1) return CEB_EINVAL;
  size_t padded = (n + 3) / 4 * 4;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)secret[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
             (c >= '0' && c <= '9') || c == '+' || c == '/' ||
             (c == '=' && i >= n - 2 && n % 4 == 0 &&
              (i == n - 1 || secret[n - 1] == '='));
    if (!ok) return CEB_EINVAL;
  }
  size_t pad = padded - n;
  if (n % 4 == 0)
    pad = secret[n - 1] == '=' ? (secret[n - 2] == '=' ? 2 : 1) : 0;
  char *text = malloc(padded + 1);
  unsigned char *copy = malloc(padded / 4 * 3 + 1);
  if (!text || !copy) {
    free(text);
    free(copy);
    return CEB_ENOMEM;
  }
  memcpy(text, secret, n);
  memset(text + n, '=', padded - n);
  text[padded] = '\0';
  /* EVP_DecodeBlock counts padding as zero bytes: drop them. */
  int got = EVP_DecodeBlock(copy, (const unsigned char *)text, (int)padded);
  OPENSSL_cleanse(text, padded);
  free(text);
  if (got < 0 || (size_t)got < pad || (size_t)got - pad == 0) {
    OPENSSL_cleanse(copy, padded / 4 * 3 + 1);
    free(copy);
    return CEB_EINVAL;
  }
  size_t raw_len = (size_t)got - pad;
  *key = copy;
  *key_len = raw_len;
  return CEB_OK;
}

int http_webhook_keys_new(const char *const *secrets, size_t n,
                          http_webhook_keys **out, size_t *bad_index) {
  if (!out) return CEB_EINVAL;
  *out = NULL;
  if (!secrets || n == 0 || n > 64) return CEB_EINVAL;
  http_webhook_keys *ks = calloc(1, sizeof(*ks) + n * sizeof(webhook_key));
  if (!ks) return CEB_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    int rc = http_webhook_secret_parse(secrets[i], &ks->keys[i].bytes,
                                       &ks->keys[i].len);
    if (rc != CEB_OK) {
      if (bad_index) *bad_index = i;
      http_webhook_keys_free(ks);
      return rc;
    }
    ks->count = i + 1;
  }
  *out = ks;
  return CEB_OK;
}

int http_webhook_keys_config(const char *const *secrets, size_t n,
                             http_webhook_keys **out, char *why,
                             size_t why_len) {
  size_t bad = 0;
  int rc = http_webhook_keys_new(secrets, n, out, &bad);
  if (rc == CEB_ENOMEM) return rc;
  if (rc != CEB_OK) {
    snprintf(why, why_len,
             "webhook.secrets: secret #%zu is not whsec_ + base64 (at most 64 "
             "secrets)",
             bad + 1);
    return CEB_ECONFIG;
  }
  for (size_t i = 0; i < (*out)->count; i++) {
    if ((*out)->keys[i].len >= HTTP_WEBHOOK_SECRET_MIN_BYTES) continue;
    snprintf(why, why_len,
             "webhook.secrets: secret #%zu decodes to %zu bytes; a signing "
             "secret is at least %d random bytes (192 bits), e.g. whsec_$(head "
             "-c 32 /dev/urandom | base64)",
             i + 1, (*out)->keys[i].len, HTTP_WEBHOOK_SECRET_MIN_BYTES);
    http_webhook_keys_free(*out);
    *out = NULL;
    return CEB_ECONFIG;
  }
  return CEB_OK;
}

void http_webhook_keys_free(http_webhook_keys *keys) {
  if (!keys) return;
  for (size_t i = 0; i < keys->count; i++) {
    OPENSSL_cleanse(keys->keys[i].bytes, keys->keys[i].len);
    free(keys->keys[i].bytes);
  }
  free(keys);
}

size_t http_webhook_keys_count(const http_webhook_keys *keys) {
  return keys ? keys->count : 0;
}

/* A Unix timestamp as the scheme writes it: decimal digits only. */
static int timestamp_parse(const char *text, int64_t *value) {
  if (!text || !*text || strlen(text) > 18) return CEB_EINVAL;
  int64_t v = 0;
  for (const char *p = text; *p; p++) {
    if (*p < '0' || *p > '9') return CEB_EINVAL;
    v = v * 10 + (*p - '0');
  }
  *value = v;
  return CEB_OK;
}

/* HMAC-SHA256(key, id "." ts "." body) -> "v1,<base64>" in out. */
static int sign_one(const webhook_key *key, const char *msg_id,
                    const char *timestamp, const void *body, size_t len,
                    char out[SIG_TEXT_MAX + 1]) {
  int rc = CEB_EINTERNAL;
  EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
  unsigned char digest[SIG_LEN];
  size_t digest_len = 0;
  char digest_name[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  if (!ctx) goto done;
  if (!EVP_MAC_init(ctx, key->bytes, key->len, params) ||
      !EVP_MAC_update(ctx, (const unsigned char *)msg_id, strlen(msg_id)) ||
      !EVP_MAC_update(ctx, (const unsigned char *)".", 1) ||
      !EVP_MAC_update(ctx, (const unsigned char *)timestamp,
                      strlen(timestamp)) ||
      !EVP_MAC_update(ctx, (const unsigned char *)".", 1) ||
      (len && !EVP_MAC_update(ctx, body, len)) ||
      !EVP_MAC_final(ctx, digest, &digest_len, sizeof(digest)) ||
      digest_len != SIG_LEN)
    goto done;
  memcpy(out, "v1,", 3);
  EVP_EncodeBlock((unsigned char *)out + 3, digest, (int)digest_len);
  rc = CEB_OK;
done:
  OPENSSL_cleanse(digest, sizeof(digest));
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return rc;
}

int http_webhook_sign(const http_webhook_keys *keys, const char *msg_id,
                      const char *timestamp, const void *body, size_t len,
                      char **out) {
  if (!out) return CEB_EINVAL;
  *out = NULL;
  int64_t ts;
  if (!keys || keys->count == 0 || !msg_id || !*msg_id || (!body && len) ||
      timestamp_parse(timestamp, &ts) != CEB_OK)
    return CEB_EINVAL;
  char *text = malloc(keys->count * (SIG_TEXT_MAX + 1));
  if (!text) return CEB_ENOMEM;
  size_t used = 0;
  for (size_t i = 0; i < keys->count; i++) {
    char one[SIG_TEXT_MAX + 1];
    int rc = sign_one(&keys->keys[i], msg_id, timestamp, body, len, one);
    if (rc != CEB_OK) {
      free(text);
      return rc;
    }
    if (i) text[used++] = ' ';
    size_t n = strlen(one);
    memcpy(text + used, one, n);
    used += n;
  }
  text[used] = '\0';
  *out = text;
  return CEB_OK;
}

int http_webhook_sign_at(const http_webhook_keys *keys, const char *msg_id,
                         int64_t timestamp_s, const void *body, size_t len,
                         char **out) {
  if (out) *out = NULL;
  if (timestamp_s < 0) return CEB_EINVAL;
  char ts[24];
  snprintf(ts, sizeof(ts), "%" PRId64, timestamp_s);
  return http_webhook_sign(keys, msg_id, ts, body, len, out);
}

int http_webhook_verify(const http_webhook_keys *keys, const char *msg_id,
                        const char *timestamp, const char *signature,
                        const void *body, size_t len, int64_t now_s,
                        int64_t tolerance_s) {
  int64_t ts;
  if (!keys || keys->count == 0 || !msg_id || !*msg_id || !signature ||
      (!body && len) || timestamp_parse(timestamp, &ts) != CEB_OK)
    return CEB_EINVAL;
  if (tolerance_s >= 0 &&
      (ts < now_s - tolerance_s || ts > now_s + tolerance_s))
    return CEB_ETIMEOUT;

  char expected[64][SIG_TEXT_MAX + 1];
  size_t nkeys = keys->count < 64 ? keys->count : 64;
  for (size_t k = 0; k < nkeys; k++) {
    int rc =
        sign_one(&keys->keys[k], msg_id, timestamp, body, len, expected[k]);
    if (rc != CEB_OK) return rc;
  }
  /* Walk the space-separated list; only "v1," entries can match. The length
   * is public (fixed for v1), the content is compared in constant time. */
  int match = 0;
  const char *p = signature;
  while (*p) {
    while (*p == ' ')
      p++;
    const char *end = p;
    while (*end && *end != ' ')
      end++;
    size_t n = (size_t)(end - p);
    if (n > 3 && strncmp(p, "v1,", 3) == 0) {
      for (size_t k = 0; k < nkeys; k++) {
        if (n == strlen(expected[k]) && CRYPTO_memcmp(p, expected[k], n) == 0)
          match = 1;
      }
    }
    p = end;
  }
  OPENSSL_cleanse(expected, sizeof(expected));
  return match ? CEB_OK : CEB_EAUTH;
}
