/* TLS policy test helpers (ceb_test_tls.h). */
#include "ceb_test_tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

int ceb_tls_rsa_cert(const char *dir) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
           "-subj /CN=127.0.0.1 "
           "-addext subjectAltName=IP:127.0.0.1,DNS:localhost "
           "-keyout '%s/rsa.key' -out '%s/rsa.crt' >/dev/null 2>&1",
           dir, dir);
  return system(cmd) == 0 ? 0 : -1;
}

struct ceb_tls_srv {
  SSL_CTX *ctx;
  int fd, port;
  int stop_pipe[2];
  pthread_t thread;
  char *body;
  atomic_int handshakes, requests, connections;
};

/* Reads the request head and as much body as Content-Length says (5 s per
 * read at most: the socket has a receive timeout). */
static void read_request(SSL *ssl) {
  char buf[16384];
  size_t len = 0;
  char *end = NULL;
  while (len < sizeof buf - 1 && !end) {
    int n = SSL_read(ssl, buf + len, (int)(sizeof buf - 1 - len));
    if (n <= 0) return;
    len += (size_t)n;
    buf[len] = '\0';
    end = strstr(buf, "\r\n\r\n");
  }
  if (!end) return;
  const char *cl = strcasestr(buf, "\r\nContent-Length:");
  size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0;
  size_t have = len - (size_t)(end + 4 - buf);
  while (have < want && have < (1u << 20)) {
    int n = SSL_read(ssl, buf, sizeof buf);
    if (n <= 0) return;
    have += (size_t)n;
  }
}

static void serve(ceb_tls_srv *s, int cfd) {
  struct timeval tv = {5, 0};
  setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  SSL *ssl = SSL_new(s->ctx);
  if (!ssl) return;
  SSL_set_fd(ssl, cfd);
  if (SSL_accept(ssl) == 1) {
    atomic_fetch_add(&s->handshakes, 1);
    read_request(ssl);
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     strlen(s->body));
    if (SSL_write(ssl, head, n) == n &&
        SSL_write(ssl, s->body, (int)strlen(s->body)) == (int)strlen(s->body))
      atomic_fetch_add(&s->requests, 1);
    SSL_shutdown(ssl);
  }
  ERR_clear_error();
  SSL_free(ssl);
}

static void *run(void *arg) {
  ceb_tls_srv *s = arg;
  for (;;) {
    struct pollfd p[2] = {{s->fd, POLLIN, 0}, {s->stop_pipe[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) continue;
    if (p[1].revents) break;
    int cfd = accept(s->fd, NULL, NULL);
    if (cfd < 0) continue;
    serve(s, cfd);
    close(cfd);
    atomic_fetch_add(&s->connections, 1);
  }
  return NULL;
}

ceb_tls_srv *ceb_tls_srv_start(const char *cert, const char *key,
                               int min_version, int max_version,
                               const char *ciphers, const char *body) {
  ceb_tls_srv *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->fd = -1;
  s->stop_pipe[0] = s->stop_pipe[1] = -1;
  s->body = strdup(body ? body : "{}");
  s->ctx = SSL_CTX_new(TLS_server_method());
  if (!s->body || !s->ctx) goto fail;
  /* level 0: TLS 1.0/1.1 and weak suites work here when asked for, so a
   * refusal comes from the client under test */
  SSL_CTX_set_security_level(s->ctx, 0);
  if (SSL_CTX_set_min_proto_version(s->ctx, min_version) != 1 ||
      SSL_CTX_set_max_proto_version(s->ctx, max_version) != 1 ||
      SSL_CTX_set_cipher_list(s->ctx, ciphers ? ciphers : "DEFAULT") != 1 ||
      SSL_CTX_use_certificate_chain_file(s->ctx, cert) != 1 ||
      SSL_CTX_use_PrivateKey_file(s->ctx, key, SSL_FILETYPE_PEM) != 1)
    goto fail;
  s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      listen(s->fd, 16) != 0 ||
      getsockname(s->fd, (struct sockaddr *)&sa, &sl) != 0 ||
      pipe(s->stop_pipe) != 0)
    goto fail;
  s->port = ntohs(sa.sin_port);
  if (pthread_create(&s->thread, NULL, run, s) != 0) goto fail;
  return s;
fail:
  ERR_print_errors_fp(stderr);
  if (s->fd >= 0) close(s->fd);
  if (s->stop_pipe[0] >= 0) close(s->stop_pipe[0]);
  if (s->stop_pipe[1] >= 0) close(s->stop_pipe[1]);
  SSL_CTX_free(s->ctx);
  free(s->body);
  free(s);
  return NULL;
}

int ceb_tls_srv_require_client(ceb_tls_srv *s, const char *ca_file) {
  if (SSL_CTX_load_verify_locations(s->ctx, ca_file, NULL) != 1) {
    ERR_print_errors_fp(stderr);
    return -1;
  }
  SSL_CTX_set_verify(s->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     NULL);
  return 0;
}

int ceb_tls_srv_port(const ceb_tls_srv *s) {
  return s->port;
}
int ceb_tls_srv_handshakes(ceb_tls_srv *s) {
  return atomic_load(&s->handshakes);
}
int ceb_tls_srv_requests(ceb_tls_srv *s) {
  return atomic_load(&s->requests);
}
int ceb_tls_srv_connections(ceb_tls_srv *s) {
  return atomic_load(&s->connections);
}

void ceb_tls_srv_stop(ceb_tls_srv *s) {
  if (!s) return;
  if (write(s->stop_pipe[1], "x", 1) != 1) perror("ceb_tls_srv_stop");
  pthread_join(s->thread, NULL);
  close(s->fd);
  close(s->stop_pipe[0]);
  close(s->stop_pipe[1]);
  SSL_CTX_free(s->ctx);
  free(s->body);
  free(s);
}

int ceb_tls_probe(int port, const char *args, int want) {
  char cmd[1024];
  /* timeout: a listener that neither answers nor closes fails the probe
   * instead of hanging the test */
  snprintf(cmd, sizeof cmd,
           "timeout 30 openssl s_client -connect 127.0.0.1:%d %s "
           "</dev/null 2>&1",
           port, args);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char out[16384];
  size_t len = fread(out, 1, sizeof out - 1, p);
  out[len] = '\0';
  int st = pclose(p);
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) > 1) {
    fprintf(stderr, "probe failed to run: %s\n%s\n", cmd, out);
    return -1;
  }
  /* s_client exits 0 after a completed handshake (stdin at EOF) and 1
   * when the handshake fails */
  int ok = WEXITSTATUS(st) == 0 && !strstr(out, "Cipher is (NONE)");
  if (want >= 0 && ok != want)
    fprintf(stderr, "probe `openssl s_client %s` on port %d: %s\n%s\n", args,
            port, ok ? "handshake completed" : "refused", out);
  return ok;
}
