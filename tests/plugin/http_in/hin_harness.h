/* Test harness for the http plugin's source role: loads http.so with
 * dlopen, runs one intermediary instance against the fake host on
 * 127.0.0.1 (ephemeral port), and talks to it with libcurl. Keys and
 * tokens for the OAuth2 cases are made with OpenSSL and libjwt.
 * Single test thread, except hin_post_async which runs one request on its
 * own thread. */
#ifndef HIN_HARNESS_H
#define HIN_HARNESS_H

#include <ceb/ceb.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>

#include "ceb_fake_host.h"
#include "ceb_test.h"

typedef struct hin_env {
  ceb_fake_host *fake;
  void *dl;
  const ceb_plugin *plugin;
  ceb_config *cfg;
  void *state;
  char *dir; /* temp dir of this test */
  int port;
  char url[128]; /* http://127.0.0.1:PORT/events */
  int destroyed;
} hin_env;

/* Set before hin_start: the instance is told its section has `map` (ABI
 * 1.2, ceb_instance_info.mapped); set the fake's map function with
 * ceb_fake_set_map on e->fake... before any request. */
extern int hin_mapped;

/* Starts an instance from "key=value" entries (NULL-terminated). listen and
 * port_file are added unless given. Returns NULL (and logs) on failure;
 * *init_status gets init's status when not NULL. */
hin_env *hin_start(const char *const *entries, int *init_status);
/* Runs init only (for config errors); returns its status and cleans up. */
int hin_init_status(const char *const *entries);
/* Destroys the instance (if not yet) and frees everything. */
void hin_stop(hin_env *e);

typedef struct hin_resp {
  long status; /* 0: transport failure */
  char *body;
  size_t len;
  char *headers; /* raw response header lines */
} hin_resp;

/* Timeout of each hin_request (ms, 20000 unless a test changes it; each
 * request is made on a new connection). Test thread only. */
extern long hin_timeout_ms;

/* POSTs body with extra "Name: value" headers (NULL-terminated, may be
 * NULL). method NULL = POST. chunked sends without Content-Length. */
hin_resp hin_request(const char *url, const char *method,
                     const char *const *headers, const void *body, size_t len,
                     int chunked);
/* POST over HTTPS trusting ca_path; client_cert/client_key (PEM files)
 * may be NULL. */
hin_resp hin_post_tls(const char *url, const char *const *headers,
                      const char *body, const char *ca_path,
                      const char *client_cert, const char *client_key);
hin_resp hin_post(hin_env *e, const char *const *headers, const char *body);
void hin_resp_free(hin_resp *r);
/* Value of a response header (copied into buf), or NULL. */
const char *hin_header(const hin_resp *r, const char *name, char *buf,
                       size_t n);
/* 1 when the JSON body has string member `name` equal to want. */
int hin_json_str(const hin_resp *r, const char *name, const char *want);
/* Number of elements of the body's errors array (-1 when absent); and the
 * index member of element i (-1 when absent). */
int hin_errors_count(const hin_resp *r);
int hin_error_index(const hin_resp *r, int i);

typedef struct hin_async {
  pthread_t thread;
  atomic_int done;
  char *url;
  char **headers;
  char *body;
  hin_resp resp;
  int64_t start_ms, elapsed_ms; /* ceb_test_now_ms; elapsed once done */
} hin_async;

/* Runs hin_post on a thread. */
hin_async *hin_post_async(hin_env *e, const char *const *headers,
                          const char *body);
/* Waits for it to finish (up to timeout_ms); 1 when done. */
int hin_async_wait(hin_async *a, int64_t timeout_ms);
/* Joins and frees; the response is moved to *out when not NULL. */
void hin_async_free(hin_async *a, hin_resp *out);

/* ---- OAuth2 test issuer ---- */

typedef struct hin_issuer {
  EVP_PKEY *rsa, *ec, *rsa2;
  char *rsa_pub_pem;
} hin_issuer;

hin_issuer *hin_issuer_new(void);
void hin_issuer_free(hin_issuer *is);
/* Writes a JWKS with the RSA key as kid "rsa1" (alg given, NULL to leave
 * alg out), the EC key as "ec1", the RSA key again as "ps1" pinned to
 * PS256, and, when with_rsa2, the second RSA key as "rsa2". CEB_OK. */
int hin_issuer_write_jwks(hin_issuer *is, const char *path, const char *rsa_alg,
                          int with_rsa2);
/* Signs claims (a JSON object text) with header {alg, kid}. alg: RS256,
 * ES256, PS256 with the matching key (kid "rsa2" selects the second RSA
 * key); "HS256" uses the RSA public PEM as the HMAC key (the attack);
 * "none" makes an unsigned token. kid NULL leaves it out. malloc'd. */
char *hin_token(hin_issuer *is, const char *alg, const char *kid,
                const char *claims_json);
/* As hin_token, signed with OpenSSL rather than libjwt (which always
 * writes typ "JWT"): header {alg, typ, kid}; typ NULL leaves it out. RS256,
 * ES256, PS256, HS256 as above. malloc'd. */
char *hin_token_typ(hin_issuer *is, const char *alg, const char *kid,
                    const char *typ, const char *claims_json);
/* Standard claims for the tests: iss https://idp.test, aud cebridge,
 * client_id given, exp/nbf relative to now (seconds), scope. */
char *hin_claims(const char *client, long exp_in, long nbf_in, const char *aud,
                 const char *scope);

#endif
