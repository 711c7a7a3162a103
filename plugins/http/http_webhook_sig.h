/* Standard Webhooks signatures (https://www.standardwebhooks.com), the
 * symmetric "v1" scheme:
 *
 *   webhook-signature = "v1," base64(HMAC-SHA256(key, id "." ts "." body))
 *
 * where key is the base64 decoding of the configured secret after an
 * optional "whsec_" prefix. Several secrets may be active at once (rotation):
 * the sender signs with every one of them (space-separated signatures), the
 * receiver accepts a request when any signature matches any secret.
 *
 * Used by the webhook sink (signing) and the intermediary source
 * (verification). A key set is immutable after creation and may be used
 * from any number of threads at once. */
#ifndef HTTP_WEBHOOK_SIG_H
#define HTTP_WEBHOOK_SIG_H

#include <stddef.h>
#include <stdint.h>

/* Tolerance the reference libraries apply, both directions, in seconds. */
#define HTTP_WEBHOOK_SIG_TOLERANCE_S 300

/* The shortest key a secret may decode to: "Willekeurig, minstens 24 bytes
 * (192 bits)" (meemoo webhook guide, seed 002, "Signering secret"); the
 * Standard Webhooks reference libraries generate 24 bytes too. */
#define HTTP_WEBHOOK_SECRET_MIN_BYTES 24

typedef struct http_webhook_keys http_webhook_keys;

/* Parses one secret ("whsec_" + base64, or bare base64; missing '=' padding
 * is restored) into its raw key. An empty secret, an empty key or invalid
 * base64 is CEB_EINVAL. On CEB_OK *key (malloc'd, free with free()) holds
 * *key_len bytes owned by the caller. */
int http_webhook_secret_parse(const char *secret, unsigned char **key,
                              size_t *key_len);

/* Creates a key set from n secrets (n >= 1), in order: the first is the
 * current one. Any key length is taken (the shared test vectors sign with
 * shorter keys); configured secrets go through http_webhook_keys_config.
 * On error returns CEB_EINVAL (bad secret; *bad_index names it when
 * bad_index is not NULL) or CEB_ENOMEM, and *out is NULL. The caller owns
 * *out; free it with http_webhook_keys_free. */
int http_webhook_keys_new(const char *const *secrets, size_t n,
                          http_webhook_keys **out, size_t *bad_index);

/* The key set of a `webhook.secrets` value, for the webhook sink and the
 * intermediary alike: http_webhook_keys_new, then every key must be at least
 * HTTP_WEBHOOK_SECRET_MIN_BYTES long. On CEB_ECONFIG why (why_len bytes)
 * holds the reason, starting with the key name so the host reports its
 * file:line, e.g. "webhook.secrets: secret #2 decodes to 16 bytes, ...";
 * CEB_ENOMEM otherwise. The caller owns *out. */
int http_webhook_keys_config(const char *const *secrets, size_t n,
                             http_webhook_keys **out, char *why,
                             size_t why_len);
/* Wipes the keys and frees the set. NULL is ignored. */
void http_webhook_keys_free(http_webhook_keys *keys);
size_t http_webhook_keys_count(const http_webhook_keys *keys);

/* Signs with every key of the set: *out (malloc'd, caller frees with free())
 * receives "v1,<sig1> v1,<sig2> ...". timestamp must be a non-negative decimal
 * integer (Unix seconds) and msg_id non-empty, else CEB_EINVAL. */
int http_webhook_sign(const http_webhook_keys *keys, const char *msg_id,
                      const char *timestamp, const void *body, size_t len,
                      char **out);
/* Same with the timestamp as a number (seconds since the epoch, >= 0). */
int http_webhook_sign_at(const http_webhook_keys *keys, const char *msg_id,
                         int64_t timestamp_s, const void *body, size_t len,
                         char **out);

/* Verifies a request: msg_id, timestamp and signature are the values of the
 * webhook-id, webhook-timestamp and webhook-signature headers (NULL when the
 * header is absent), body the raw request body, now_s the receiver's clock.
 * tolerance_s < 0 turns the timestamp window off (replay-prone; tests and
 * offline checks only). Every v1 signature of the header is compared, in
 * constant time, against every key. Returns:
 *   CEB_OK        a signature matches;
 *   CEB_EINVAL    a header is missing or the timestamp is not an integer;
 *   CEB_ETIMEOUT  the timestamp is more than tolerance_s away from now_s;
 *   CEB_EAUTH     no signature matches. */
int http_webhook_verify(const http_webhook_keys *keys, const char *msg_id,
                        const char *timestamp, const char *signature,
                        const void *body, size_t len, int64_t now_s,
                        int64_t tolerance_s);

#endif
