#include "http_jws.h"

#include "http_in_util.h"

#include <ceb/ceb.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

#define ES256_COORD 32
#define RSA_MIN_BITS 2048

static EVP_PKEY *read_key(const char *pem) {
  BIO *bio = BIO_new_mem_buf(pem, -1);
  EVP_PKEY *pkey = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
  BIO_free(bio);
  return pkey;
}

/* The key must be of the algorithm's type (and curve): a key pinned to
 * ES256 is never used as an RSA key or the other way round. */
static int key_fits(EVP_PKEY *pkey, http_jwk_alg alg) {
  if (alg == HTTP_JWK_ES256) {
    char group[32];
    return EVP_PKEY_is_a(pkey, "EC") &&
           EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME,
                                          group, sizeof group, NULL) == 1 &&
           strcmp(group, "prime256v1") == 0;
  }
  /* RFC 7518 3.3 and 3.5: an RSA key of 2048 bits or larger MUST be used
   * (a JWKS serving a smaller one is not trusted for it) */
  return EVP_PKEY_is_a(pkey, "RSA") && EVP_PKEY_get_bits(pkey) >= RSA_MIN_BITS;
}

/* JWS ES256 signatures are r||s, 32 bytes each (RFC 7518 3.4); OpenSSL
 * wants an ASN.1 ECDSA-Sig-Value. */
static int es256_to_der(unsigned char **sig, size_t *sig_len) {
  if (*sig_len != 2 * ES256_COORD) return 0;
  ECDSA_SIG *es = ECDSA_SIG_new();
  BIGNUM *r = BN_bin2bn(*sig, ES256_COORD, NULL);
  BIGNUM *s = BN_bin2bn(*sig + ES256_COORD, ES256_COORD, NULL);
  if (!es || !r || !s || ECDSA_SIG_set0(es, r, s) != 1) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return 0;
  }
  unsigned char *der = NULL;
  int n = i2d_ECDSA_SIG(es, &der);
  ECDSA_SIG_free(es);
  if (n <= 0) return 0;
  free(*sig);
  *sig = malloc((size_t)n);
  if (!*sig) {
    OPENSSL_free(der);
    return 0;
  }
  memcpy(*sig, der, (size_t)n);
  OPENSSL_free(der);
  *sig_len = (size_t)n;
  return 1;
}

int http_jws_verify(const char *pem, http_jwk_alg alg, const char *input,
                    size_t signed_len, const char *sig_b64,
                    size_t sig_b64_len) {
  unsigned char *sig = NULL;
  size_t sig_len = 0;
  if (sig_b64_len == 0 ||
      http_b64url_decode(sig_b64, sig_b64_len, &sig, &sig_len) != CEB_OK)
    return 0;
  EVP_PKEY *pkey = read_key(pem);
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  EVP_PKEY_CTX *pctx = NULL;
  int ok = pkey && md && key_fits(pkey, alg) &&
           (alg != HTTP_JWK_ES256 || es256_to_der(&sig, &sig_len)) &&
           EVP_DigestVerifyInit(md, &pctx, EVP_sha256(), NULL, pkey) == 1;
  if (ok && alg == HTTP_JWK_PS256)
    ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) > 0 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) > 0;
  else if (ok && alg == HTTP_JWK_RS256)
    ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) > 0;
  ok = ok && EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)input,
                              signed_len) == 1;
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(pkey);
  free(sig);
  return ok;
}
