#include "aa_registry_stub.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES 32

typedef struct entry {
  char path[512]; /* full request path of the content */
  char version[64];
  char list_path[512]; /* the versions list it belongs to ("" for files) */
  char *content;
  unsigned long etag;
} entry;

struct aa_stub {
  struct MHD_Daemon *d;
  char prefix[128];
  pthread_mutex_t lock;
  entry e[MAX_ENTRIES];
  size_t n;
  size_t n200, n304, n401;
  /* authentication (aa_stub_require_token, aa_stub_set_client) */
  int check_auth;
  char static_token[128];
  char basic[512]; /* the expected "Basic ..." value; "" without a client */
  char issued[64]; /* the one issued token taken; "" when none */
  size_t tokens_issued, tokens_refused, auth_seen;
};

static unsigned long hash(const char *s) {
  unsigned long h = 5381;
  for (; *s; s++)
    h = h * 33 + (unsigned char)*s;
  return h;
}

static enum MHD_Result reply(struct MHD_Connection *c, int status,
                             const char *body, const char *etag) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  if (etag) MHD_add_response_header(r, "ETag", etag);
  if (*body) MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *data,
                              size_t *size, void **ptr) {
  (void)version;
  (void)data;
  (void)size;
  aa_stub *s = cls;
  if (!*ptr) {
    *ptr = s;
    return MHD_YES;
  }
  if (*size) { /* a token request's form: the credentials are in the head */
    *size = 0;
    return MHD_YES;
  }
  const char *authz =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  char token_path[160];
  snprintf(token_path, sizeof token_path, "%s/token", s->prefix);
  if (strcmp(method, "POST") == 0 && strcmp(url, token_path) == 0) {
    pthread_mutex_lock(&s->lock);
    int ok = s->basic[0] && authz && strcmp(authz, s->basic) == 0;
    char body[200];
    if (ok) {
      s->tokens_issued++;
      snprintf(s->issued, sizeof s->issued, "issued-%zu", s->tokens_issued);
      snprintf(body, sizeof body,
               "{\"access_token\":\"%s\",\"token_type\":\"Bearer\","
               "\"expires_in\":3600}",
               s->issued);
    } else {
      s->tokens_refused++;
      snprintf(body, sizeof body, "{\"error\":\"invalid_client\"}");
    }
    pthread_mutex_unlock(&s->lock);
    return reply(c, ok ? 200 : 401, body, NULL);
  }
  if (strcmp(method, "GET") != 0) return reply(c, 405, "", NULL);
  pthread_mutex_lock(&s->lock);
  if (authz) s->auth_seen++;
  if (s->check_auth) {
    const char *bearer =
        authz && strncmp(authz, "Bearer ", 7) == 0 ? authz + 7 : NULL;
    int ok = bearer &&
             ((s->static_token[0] && strcmp(bearer, s->static_token) == 0) ||
              (s->issued[0] && strcmp(bearer, s->issued) == 0));
    if (!ok) {
      s->n401++;
      pthread_mutex_unlock(&s->lock);
      return reply(c, 401, "{\"status\":401}", NULL);
    }
  }
  pthread_mutex_unlock(&s->lock);
  const char *inm =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
  pthread_mutex_lock(&s->lock);
  /* A versions list? */
  char list[8192];
  size_t o = 0;
  int listed = 0;
  o += (size_t)snprintf(list, sizeof list, "{\"count\":0,\"versions\":[");
  for (size_t i = 0; i < s->n; i++)
    if (s->e[i].list_path[0] && strcmp(s->e[i].list_path, url) == 0) {
      o += (size_t)snprintf(list + o, sizeof list - o,
                            "%s{\"version\":\"%s\",\"state\":\"ENABLED\"}",
                            listed ? "," : "", s->e[i].version);
      listed++;
    }
  if (listed) {
    snprintf(list + o, sizeof list - o, "]}");
    s->n200++;
    pthread_mutex_unlock(&s->lock);
    return reply(c, 200, list, NULL);
  }
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->e[i].path, url) == 0) {
      char etag[64];
      snprintf(etag, sizeof etag, "\"%lx\"", s->e[i].etag);
      if (inm && strcmp(inm, etag) == 0) {
        s->n304++;
        pthread_mutex_unlock(&s->lock);
        return reply(c, 304, "", etag);
      }
      char *body = strdup(s->e[i].content);
      s->n200++;
      pthread_mutex_unlock(&s->lock);
      enum MHD_Result rc = reply(c, 200, body ? body : "", etag);
      free(body);
      return rc;
    }
  pthread_mutex_unlock(&s->lock);
  return reply(c, 404, "{\"status\":404}", NULL);
}

static void put(aa_stub *s, const char *path, const char *list_path,
                const char *version, const char *content) {
  pthread_mutex_lock(&s->lock);
  entry *e = NULL;
  for (size_t i = 0; i < s->n && !e; i++)
    if (strcmp(s->e[i].path, path) == 0) e = &s->e[i];
  if (!e && s->n < MAX_ENTRIES) {
    e = &s->e[s->n++];
    snprintf(e->path, sizeof e->path, "%s", path);
    snprintf(e->list_path, sizeof e->list_path, "%s", list_path);
    snprintf(e->version, sizeof e->version, "%s", version);
  }
  if (e) {
    free(e->content);
    e->content = strdup(content);
    e->etag = hash(content);
  }
  pthread_mutex_unlock(&s->lock);
}

void aa_stub_set_version(aa_stub *s, const char *group, const char *artifact,
                         const char *version, const char *content) {
  char list[512], path[600];
  snprintf(list, sizeof list, "%s/groups/%s/artifacts/%s/versions", s->prefix,
           group, artifact);
  snprintf(path, sizeof path, "%s/%s/content", list, version);
  put(s, path, list, version, content);
}

void aa_stub_set_file(aa_stub *s, const char *name, const char *content) {
  char path[512];
  snprintf(path, sizeof path, "%s/files/%s", s->prefix, name);
  put(s, path, "", "", content);
}

size_t aa_stub_count(aa_stub *s, int status) {
  pthread_mutex_lock(&s->lock);
  size_t n = status == 304 ? s->n304 : status == 401 ? s->n401 : s->n200;
  pthread_mutex_unlock(&s->lock);
  return n;
}

aa_stub *aa_stub_start(const char *prefix) {
  aa_stub *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
  pthread_mutex_init(&s->lock, NULL);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                          0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, &sa,
                          MHD_OPTION_END);
  if (!s->d) {
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
  }
  return s;
}

int aa_stub_port(const aa_stub *s) {
  return MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT)->port;
}

void aa_stub_stop(aa_stub *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  for (size_t i = 0; i < s->n; i++)
    free(s->e[i].content);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

void aa_stub_require_token(aa_stub *s, const char *token) {
  pthread_mutex_lock(&s->lock);
  snprintf(s->static_token, sizeof s->static_token, "%s", token ? token : "");
  s->check_auth = token || s->basic[0];
  pthread_mutex_unlock(&s->lock);
}

void aa_stub_set_client(aa_stub *s, const char *client_id, const char *secret) {
  char plain[256];
  unsigned char b64[350];
  /* the test's ids need no form-encoding (RFC 6749 2.3.1) */
  int n = snprintf(plain, sizeof plain, "%s:%s", client_id, secret);
  EVP_EncodeBlock(b64, (const unsigned char *)plain, n);
  pthread_mutex_lock(&s->lock);
  snprintf(s->basic, sizeof s->basic, "Basic %s", (const char *)b64);
  s->check_auth = 1;
  pthread_mutex_unlock(&s->lock);
}

void aa_stub_revoke(aa_stub *s) {
  pthread_mutex_lock(&s->lock);
  s->issued[0] = '\0';
  pthread_mutex_unlock(&s->lock);
}

static size_t counter(aa_stub *s, const size_t *v) {
  pthread_mutex_lock(&s->lock);
  size_t n = *v;
  pthread_mutex_unlock(&s->lock);
  return n;
}

size_t aa_stub_tokens_issued(aa_stub *s) {
  return counter(s, &s->tokens_issued);
}
size_t aa_stub_tokens_refused(aa_stub *s) {
  return counter(s, &s->tokens_refused);
}
size_t aa_stub_auth_seen(aa_stub *s) {
  return counter(s, &s->auth_seen);
}
