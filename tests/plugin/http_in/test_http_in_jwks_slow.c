/* A slow identity provider does not stall ingress (issue 16 C4). The JWKS
 * server here holds its answer HOLD_MS (under the fetch's 5 s timeout), or
 * until the test lets it go. While it holds a refresh caused by tokens with
 * random kids, on an intermediary with one listener thread:
 * - requests with a valid token (known kid) are all answered 202 before
 *   the JWKS server answers;
 * - the random-kid requests are refused 401 auth.kid_unknown
 *   (problem+json) after waiting at most oauth2.jwks_wait (plus a margin),
 *   also before the JWKS server answers;
 * - only one fetch is made for all of them.
 * Then the issuer publishes a new kid and the fetch answers: a token with
 * the new kid is accepted (key rotation still works).
 * Before the fix the listener thread fetched: every request waited for the
 * held answer. */
#include "hin_harness.h"

#include "ceb_test_rx.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <time.h>

#define WAIT_MS 500
#define MARGIN_MS 4000 /* a loaded machine: generous, still far below */
#define HOLD_MS 4000   /* the slow answer; the fetch gives up at 5 s */
#define RANDOM_KIDS 3
#define VALID 6

typedef struct slow_idp {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  char *jwks_path;
  int slow;     /* hold the next answer HOLD_MS or until released */
  int released; /* let a held answer go */
  int held, answered;
  int64_t answered_ms; /* ceb_test_now_ms of the held answer */
} slow_idp;

/* The issuer's JWKS endpoint (ceb_test_rx; each request a fetch). */
static void serve(void *arg, const rx_request *req, size_t index,
                  rx_response *resp) {
  (void)req;
  (void)index;
  slow_idp *is = arg;
  pthread_mutex_lock(&is->lock);
  int held = is->slow;
  if (held) {
    is->slow = 0;
    is->held++;
    pthread_cond_broadcast(&is->cond);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += HOLD_MS / 1000;
    ts.tv_nsec += (HOLD_MS % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    while (!is->released)
      if (pthread_cond_timedwait(&is->cond, &is->lock, &ts) != 0) break;
  }
  pthread_mutex_unlock(&is->lock);
  char *text = ceb_test_read_file(is->jwks_path, NULL);
  rx_reply(resp, 200, NULL, text ? text : "");
  free(text);
  pthread_mutex_lock(&is->lock);
  is->answered++;
  if (held) is->answered_ms = ceb_test_now_ms();
  pthread_mutex_unlock(&is->lock);
}

static int idp_get(slow_idp *is, const int *field) {
  pthread_mutex_lock(&is->lock);
  int v = *field;
  pthread_mutex_unlock(&is->lock);
  return v;
}

static int held_answered(void *arg) {
  slow_idp *is = arg;
  pthread_mutex_lock(&is->lock);
  int64_t v = is->answered_ms;
  pthread_mutex_unlock(&is->lock);
  return v != 0;
}

static int fetch_held(void *arg) {
  slow_idp *is = arg;
  return idp_get(is, &is->held) > 0;
}

static void release(slow_idp *is) {
  pthread_mutex_lock(&is->lock);
  is->released = 1;
  pthread_cond_broadcast(&is->cond);
  pthread_mutex_unlock(&is->lock);
}

static hin_async *post_async(hin_env *e, const char *tok) {
  char authz[4096];
  snprintf(authz, sizeof authz, "Authorization: Bearer %s", tok);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              authz, NULL};
  return hin_post_async(e, hdrs,
                        "{\"specversion\":\"1.0\",\"id\":\"s\",\"source\":"
                        "\"urn:t\",\"type\":\"nl.edu.s\"}");
}

static long post(hin_env *e, const char *tok) {
  hin_async *a = post_async(e, tok);
  hin_resp r;
  hin_async_wait(a, 30000);
  hin_async_free(a, &r);
  long st = r.status;
  hin_resp_free(&r);
  return st;
}

typedef struct rotated {
  hin_env *e;
  const char *tok;
} rotated;

static int accepted(void *arg) {
  rotated *r = arg;
  return post(r->e, r->tok) == 202;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  hin_issuer *iss = hin_issuer_new();
  char *dir = ceb_test_tmpdir("http_in_jwks_slow");
  slow_idp idp = {
      PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0};
  char path[512];
  snprintf(path, sizeof path, "%s/jwks.json", dir);
  idp.jwks_path = path;
  CHECK_INT(hin_issuer_write_jwks(iss, path, "RS256", 0), CEB_OK);
  rx_server *d = rx_start(serve, &idp);
  CHECK(d != NULL);
  if (!d) return ceb_test_done("test_http_in_jwks_slow");
  int port = rx_port(d);
  char url_entry[128];
  snprintf(url_entry, sizeof url_entry,
           "oauth2.jwks_url=http://127.0.0.1:%d/certs", port);
  /* one listener thread: a request blocking it would block every other */
  const char *const cfg[] = {url_entry, "oauth2.audience=cebridge",
                             "oauth2.jwks_min_refresh=0s",

                             "threads=1", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) {
    rx_stop(d);
    return ceb_test_done("test_http_in_jwks_slow");
  }
  CHECK_INT((int)rx_count(d), 1); /* loaded at start */
  char *claims = hin_claims("partner-a", 600, -10, NULL, NULL);
  char *good = hin_token(iss, "RS256", "rsa1", claims);
  CHECK_INT(post(e, good), 202);

  /* the issuer becomes slow; random kids ask for a refresh */
  pthread_mutex_lock(&idp.lock);
  idp.slow = 1;
  pthread_mutex_unlock(&idp.lock);
  hin_async *rnd[RANDOM_KIDS];
  char *rnd_tok[RANDOM_KIDS];
  srand((unsigned)time(NULL));
  for (int i = 0; i < RANDOM_KIDS; i++) {
    char kid[32];
    snprintf(kid, sizeof kid, "random-%d-%d", i, rand());
    rnd_tok[i] = hin_token(iss, "RS256", kid, claims);
    rnd[i] = post_async(e, rnd_tok[i]);
    if (i == 0) CHECK(ceb_test_wait(fetch_held, &idp, 20000));
  }
  /* valid tokens while the fetch hangs */
  hin_async *ok[VALID];
  for (int i = 0; i < VALID; i++)
    ok[i] = post_async(e, good);
  for (int i = 0; i < VALID; i++) {
    CHECK(hin_async_wait(ok[i], 20000));
    CHECK_INT(ok[i]->resp.status, 202);
  }
  for (int i = 0; i < RANDOM_KIDS; i++) {
    CHECK(hin_async_wait(rnd[i], 20000));
    hin_resp *r = &rnd[i]->resp;
    CHECK_INT(r->status, 401);
    CHECK(hin_json_str(r, "code", "auth.kid_unknown"));
    char ct[128];
    CHECK_STR(hin_header(r, "Content-Type", ct, sizeof ct),
              "application/problem+json");
    CHECK_MSG(rnd[i]->elapsed_ms <= WAIT_MS + MARGIN_MS,
              "unknown kid answered after %lld ms",
              (long long)rnd[i]->elapsed_ms);
  }
  /* all of them were answered while the JWKS server still held its
   * answer (it answers when released below, or after HOLD_MS) */
  CHECK(!held_answered(&idp));
  CHECK_INT((int)rx_count(d), 2); /* one fetch for them all */

  /* rotation: the issuer publishes rsa2, then answers */
  CHECK_INT(hin_issuer_write_jwks(iss, path, "RS256", 1), CEB_OK);
  release(&idp);
  CHECK(ceb_test_wait(held_answered, &idp, 20000));
  char *tok2 = hin_token(iss, "RS256", "rsa2", claims);
  rotated rot = {e, tok2};
  CHECK(ceb_test_wait(accepted, &rot, 20000));
  CHECK_INT(post(e, good), 202);

  for (int i = 0; i < VALID; i++)
    hin_async_free(ok[i], NULL);
  for (int i = 0; i < RANDOM_KIDS; i++) {
    hin_async_free(rnd[i], NULL);
    free(rnd_tok[i]);
  }
  free(tok2);
  free(good);
  free(claims);
  hin_stop(e);
  release(&idp);
  rx_stop(d);
  free(dir);
  hin_issuer_free(iss);
  curl_global_cleanup();
  return ceb_test_done("test_http_in_jwks_slow");
}
