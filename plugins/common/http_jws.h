/* JWS signature check (RFC 7515 compact serialisation) with OpenSSL's EVP
 * verification: RS256 (PKCS#1 v1.5), PS256 (PSS, salt = digest length) and
 * ES256 (P-256; the JWS raw r||s signature is converted to DER first).
 *
 * Why not libjwt's jwt_decode: libjwt 1.10 refuses every header typ but
 * "JWT" before it checks the signature, and it verifies over the token's
 * own header bytes, so a token with typ "at+jwt" (RFC 9068) cannot be
 * handed to it normalised. The checks here are the ones libjwt 1.10 makes
 * (jwt_verify_sha_pem: key type must match the algorithm, EC signatures of
 * exactly 2 * 32 bytes, EVP_DigestVerify over "header.payload"), plus
 * PS256. Reentrant. */
#ifndef HTTP_JWS_H
#define HTTP_JWS_H

#include <stddef.h>

#include "http_jwks.h"

/* 1 when sig_b64 (base64url, sig_b64_len bytes) is a valid signature of
 * the signed_len bytes at input, made with alg by the key of pem (a
 * SubjectPublicKeyInfo PEM); 0 otherwise. */
int http_jws_verify(const char *pem, http_jwk_alg alg, const char *input,
                    size_t signed_len, const char *sig_b64, size_t sig_b64_len);

#endif
