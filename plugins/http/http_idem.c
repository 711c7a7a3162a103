#include "http_idem.h"

#include "http_in_util.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int http_idem_key_parse(const char *header, char key[HTTP_IDEM_KEY_LEN + 1]) {
  if (!header) return CEB_EINVAL;
  while (*header == ' ' || *header == '\t')
    header++;
  size_t n = strlen(header);
  while (n && (header[n - 1] == ' ' || header[n - 1] == '\t'))
    n--;
  if (n >= 2 && header[0] == '"' && header[n - 1] == '"') {
    header++;
    n -= 2;
  }
  if (n != HTTP_IDEM_KEY_LEN) return CEB_EINVAL;
  for (size_t i = 0; i < n; i++) {
    char c = header[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return CEB_EINVAL;
    } else if (!isxdigit((unsigned char)c)) {
      return CEB_EINVAL;
    }
    key[i] = (char)tolower((unsigned char)c);
  }
  key[n] = '\0';
  if (key[14] != '4' || !strchr("89ab", key[19])) return CEB_EINVAL;
  return CEB_OK;
}

static int cmp_header(const void *a, const void *b) {
  const ceb_header *x = *(ceb_header *const *)a, *y = *(ceb_header *const *)b;
  return strcasecmp(x->name, y->name);
}

static void feed(EVP_MD_CTX *md, const char *s, size_t n) {
  /* Length-prefixed so that no two field lists hash alike. */
  char len[24];
  int k = snprintf(len, sizeof len, "%zu:", n);
  EVP_DigestUpdate(md, len, (size_t)k);
  EVP_DigestUpdate(md, s, n);
}

int http_idem_fingerprint(const char *method, const char *path,
                          const ceb_headers *headers, const void *body,
                          size_t len, char out[HTTP_FINGERPRINT_LEN + 1]) {
  const ceb_header **ce = calloc(headers->count + 1, sizeof *ce);
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (!ce || !md) {
    free(ce);
    EVP_MD_CTX_free(md);
    return CEB_ENOMEM;
  }
  size_t nce = 0;
  for (size_t i = 0; i < headers->count; i++)
    if (strncasecmp(headers->items[i].name, "ce-", 3) == 0)
      ce[nce++] = &headers->items[i];
  qsort(ce, nce, sizeof *ce, cmp_header);
  const char *ct = ceb_headers_get(headers, "Content-Type");
  EVP_DigestInit_ex(md, EVP_sha256(), NULL);
  feed(md, method, strlen(method));
  feed(md, path, strlen(path));
  feed(md, ct ? ct : "", ct ? strlen(ct) : 0);
  for (size_t i = 0; i < nce; i++) {
    /* names case-insensitively: lower-cased, length-prefixed */
    size_t nl = strlen(ce[i]->name);
    char len_prefix[24];
    int k = snprintf(len_prefix, sizeof len_prefix, "%zu:", nl);
    EVP_DigestUpdate(md, len_prefix, (size_t)k);
    for (size_t j = 0; j < nl; j++) {
      char c = (char)tolower((unsigned char)ce[i]->name[j]);
      EVP_DigestUpdate(md, &c, 1);
    }
    feed(md, ce[i]->value, ce[i]->value_len);
  }
  feed(md, body ? body : "", len);
  unsigned char digest[32];
  unsigned int dlen = 0;
  int ok = EVP_DigestFinal_ex(md, digest, &dlen) == 1 && dlen == 32;
  EVP_MD_CTX_free(md);
  free(ce);
  if (!ok) return CEB_EINTERNAL;
  http_hex(digest, 32, out);
  return CEB_OK;
}

int http_idem_begin(const http_idem_req *q, const char *method, const char *url,
                    const ceb_headers *headers, const void *body, size_t len,
                    int *reserved, http_reply *reply) {
  *reserved = 0;
  char fp[HTTP_FINGERPRINT_LEN + 1];
  if (http_idem_fingerprint(method, url, headers, body, len, fp) != CEB_OK) {
    http_reply_problem(reply, 500, "internal", "fingerprint failed");
    return 0;
  }
  ceb_idem_record rec = {sizeof rec};
  int st = q->host->idem_begin(q->inst, q->client, q->key, fp, &rec);
  if (st != CEB_OK) {
    CEB_LOG(q->host, q->inst, CEB_LOG_ERROR, "idempotency store: %s",
            ceb_strerror(st));
    http_reply_problem(reply, 503, "idempotency.unavailable",
                       "the idempotency store is unavailable");
    http_reply_retry_after(reply, q->retry_after_s);
    return 0;
  }
  int go_on = 0;
  switch (rec.state) {
  case CEB_IDEM_NEW:
    *reserved = 1;
    go_on = 1;
    break;
  case CEB_IDEM_REPLAY:
    http_reply_set(reply, rec.http_status, rec.content_type, rec.body,
                   rec.body_len);
    http_reply_header(reply, "Idempotent-Replayed", "true");
    break;
  case CEB_IDEM_IN_FLIGHT:
    http_reply_problem(reply, 409, "idempotency.in_flight",
                       "a request with this Idempotency-Key is still being "
                       "processed");
    http_reply_retry_after(reply, 1);
    break;
  case CEB_IDEM_MISMATCH:
  default:
    http_reply_problem(reply, 422, "idempotency.mismatch",
                       "this Idempotency-Key was used for a different "
                       "request");
    break;
  }
  ceb_free(rec.content_type);
  ceb_free(rec.body);
  return go_on;
}

void http_idem_settle(const http_idem_req *q, const http_reply *reply) {
  int st = reply->status;
  if (st >= 200 && st < 500) {
    int rc = q->host->idem_finish(q->inst, q->client, q->key, st,
                                  reply->content_type, reply->body, reply->len);
    if (rc != CEB_OK)
      CEB_LOG(q->host, q->inst, CEB_LOG_ERROR,
              "idempotency: cannot store the response for "
              "key %s: %s",
              q->key, ceb_strerror(rc));
  } else {
    q->host->idem_abort(q->inst, q->client, q->key);
  }
}
