/* The admin API's Host / Origin / bearer rules (ceb_admin_guard.h): only
 * this listener's own names pass; a page's origin, a rebound DNS name, a
 * wrong or prefixed token do not. */
#include "admin/ceb_admin_guard.h"
#include "ceb_test.h"

int main(void) {
  const char *allowed[] = {"admin.example.org", "proxy.example.org:443",
                           "[fd00::5]:9000"};
  ceb_admin_guard *g = ceb_admin_guard_new("10.0.0.5", 8081, allowed, 3);
  CHECK(g != NULL);

  /* Host: the listen address, loopback names, allowed_hosts */
  CHECK(ceb_admin_guard_host_ok(g, "10.0.0.5:8081"));
  CHECK(ceb_admin_guard_host_ok(g, "127.0.0.1:8081"));
  CHECK(ceb_admin_guard_host_ok(g, "LOCALHOST:8081"));
  CHECK(ceb_admin_guard_host_ok(g, "[::1]:8081"));
  CHECK(ceb_admin_guard_host_ok(g, "admin.example.org"));
  CHECK(ceb_admin_guard_host_ok(g, "admin.example.org:8081"));
  CHECK(ceb_admin_guard_host_ok(g, "proxy.example.org:443"));
  CHECK(ceb_admin_guard_host_ok(g, "[fd00::5]:9000"));
  /* ... and nothing else: other ports, rebound names, missing Host */
  CHECK(!ceb_admin_guard_host_ok(g, "127.0.0.1:8082"));
  CHECK(!ceb_admin_guard_host_ok(g, "127.0.0.1"));
  CHECK(!ceb_admin_guard_host_ok(g, "localhost"));
  CHECK(!ceb_admin_guard_host_ok(g, "evil.example:8081"));
  CHECK(!ceb_admin_guard_host_ok(g, "proxy.example.org"));
  CHECK(!ceb_admin_guard_host_ok(g, "admin.example.org:9"));
  CHECK(!ceb_admin_guard_host_ok(g, "10.0.0.5:80810"));
  CHECK(!ceb_admin_guard_host_ok(g, ""));
  CHECK(!ceb_admin_guard_host_ok(g, NULL));

  /* Origin: scheme + an accepted host, nothing more */
  CHECK(ceb_admin_guard_origin_ok(g, "http://127.0.0.1:8081"));
  CHECK(ceb_admin_guard_origin_ok(g, "https://10.0.0.5:8081"));
  CHECK(ceb_admin_guard_origin_ok(g, "HTTP://localhost:8081"));
  CHECK(!ceb_admin_guard_origin_ok(g, "http://evil.example"));
  CHECK(!ceb_admin_guard_origin_ok(g, "http://evil.example:8081"));
  CHECK(!ceb_admin_guard_origin_ok(g, "null"));
  CHECK(!ceb_admin_guard_origin_ok(g, "file://127.0.0.1:8081"));
  CHECK(!ceb_admin_guard_origin_ok(g, "http://127.0.0.1:8081/x"));
  CHECK(!ceb_admin_guard_origin_ok(g, "http://user@127.0.0.1:8081"));
  CHECK(!ceb_admin_guard_origin_ok(g, "http://127.0.0.1:9999"));
  CHECK(!ceb_admin_guard_origin_ok(g, ""));
  ceb_admin_guard_free(g);

  /* a wildcard listen address is no Host name */
  g = ceb_admin_guard_new("0.0.0.0", 9000, NULL, 0);
  CHECK(!ceb_admin_guard_host_ok(g, "0.0.0.0:9000"));
  CHECK(ceb_admin_guard_host_ok(g, "127.0.0.1:9000"));
  ceb_admin_guard_free(g);
  g = ceb_admin_guard_new("::1", 9000, NULL, 0);
  CHECK(ceb_admin_guard_host_ok(g, "[::1]:9000"));
  CHECK(!ceb_admin_guard_host_ok(g, "::1:9000"));
  ceb_admin_guard_free(g);

  /* Bearer: exact token only */
  const char *tok = "s3cret-token";
  CHECK(ceb_admin_bearer_ok(tok, "Bearer s3cret-token"));
  CHECK(ceb_admin_bearer_ok(tok, "bearer s3cret-token"));
  CHECK(!ceb_admin_bearer_ok(tok, "Bearer s3cret-toke"));
  CHECK(!ceb_admin_bearer_ok(tok, "Bearer s3cret-token2"));
  CHECK(!ceb_admin_bearer_ok(tok, "Bearer "));
  CHECK(!ceb_admin_bearer_ok(tok, "Basic czNjcmV0LXRva2Vu"));
  CHECK(!ceb_admin_bearer_ok(tok, "s3cret-token"));
  CHECK(!ceb_admin_bearer_ok(tok, NULL));
  CHECK(!ceb_admin_bearer_ok(NULL, "Bearer "));
  CHECK(!ceb_admin_bearer_ok("", "Bearer "));
  return ceb_test_done("unit_admin_guard");
}
