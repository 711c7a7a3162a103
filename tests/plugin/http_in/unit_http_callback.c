/* The callback URL rules of plugins/common/http_callback.c: the ingest
 * check, callback_allow's prefixes after normalisation (dot segments,
 * case, default ports, a prefix that must end at a segment) and the
 * addresses a callback may connect to (server-side request forgery: the
 * client chooses the URL, the bridge makes the request). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "ceb_test.h"
#include "http_callback.h"

#include <ceb/status.h>

static int v4(const char *a, int loopback_named, int allow_private) {
  struct sockaddr_in in = {.sin_family = AF_INET};
  CHECK_INT(inet_pton(AF_INET, a, &in.sin_addr), 1);
  char why[192] = "";
  int rc = http_callback_addr_check((struct sockaddr *)&in, loopback_named,
                                    allow_private, why, sizeof why);
  if (rc != CEB_OK) CHECK_MSG(strstr(why, a) != NULL, "why: %s", why);
  return rc == CEB_OK;
}

static int v6(const char *a, int loopback_named, int allow_private) {
  struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
  CHECK_INT(inet_pton(AF_INET6, a, &in6.sin6_addr), 1);
  char why[192] = "";
  return http_callback_addr_check((struct sockaddr *)&in6, loopback_named,
                                  allow_private, why, sizeof why) == CEB_OK;
}

static int allowed(const char *url, const char *prefix) {
  char nu[HTTP_CALLBACK_NORM_MAX], np[HTTP_CALLBACK_NORM_MAX];
  if (http_callback_url_norm(url, nu, sizeof nu, NULL, 0) != CEB_OK)
    return -1;
  CHECK_INT(http_callback_url_norm(prefix, np, sizeof np, NULL, 0), CEB_OK);
  char *list[] = {np};
  return http_callback_url_allowed(nu, list, 1);
}

static void test_addresses(void) {
  /* public */
  CHECK_INT(v4("93.184.216.34", 0, 0), 1);
  CHECK_INT(v6("2001:db8::1", 0, 0), 1);
  /* never, whatever the options: metadata services, unspecified, multicast */
  CHECK_INT(v4("169.254.169.254", 1, 1), 0);
  CHECK_INT(v4("0.0.0.0", 1, 1), 0);
  CHECK_INT(v4("224.0.0.1", 1, 1), 0);
  CHECK_INT(v4("255.255.255.255", 1, 1), 0);
  CHECK_INT(v6("fe80::1", 1, 1), 0);
  CHECK_INT(v6("::", 1, 1), 0);
  CHECK_INT(v6("ff02::1", 1, 1), 0);
  CHECK_INT(v6("::ffff:169.254.169.254", 1, 1), 0);
  /* private: only with callback_private_networks */
  const char *priv[] = {"10.0.0.1",    "172.16.0.1", "172.31.255.255",
                        "192.168.1.1", "100.64.0.1", "198.18.0.1"};
  for (size_t i = 0; i < sizeof priv / sizeof priv[0]; i++) {
    CHECK_MSG(v4(priv[i], 0, 0) == 0, "%s allowed", priv[i]);
    CHECK_MSG(v4(priv[i], 0, 1) == 1, "%s refused with private", priv[i]);
  }
  CHECK_INT(v4("172.32.0.1", 0, 0), 1);  /* just past 172.16/12 */
  CHECK_INT(v4("100.128.0.1", 0, 0), 1); /* just past 100.64/10 */
  CHECK_INT(v6("fd00::1", 0, 0), 0);
  CHECK_INT(v6("fd00::1", 0, 1), 1);
  CHECK_INT(v6("::ffff:10.1.2.3", 0, 0), 0);
  /* loopback: only when the URL itself names a loopback host */
  CHECK_INT(v4("127.0.0.1", 0, 1), 0);
  CHECK_INT(v4("127.0.0.1", 1, 0), 1);
  CHECK_INT(v6("::1", 0, 1), 0);
  CHECK_INT(v6("::1", 1, 0), 1);
  CHECK_INT(v6("::ffff:127.0.0.1", 0, 1), 0);
}

/* IPv6 forms that carry an IPv4 address a translator or tunnel reaches:
 * each is judged as the IPv4 address it carries, so none is a way round
 * the IPv4 rules (a NAT64 gateway forwards 64:ff9b::169.254.169.254 to
 * the metadata service). Cloud metadata services outside link-local are
 * never reached, even with callback_private_networks. */
static void test_embedded_v4(void) {
  /* NAT64 well-known prefix 64:ff9b::/96 (RFC 6052) */
  CHECK_INT(v6("64:ff9b::169.254.169.254", 1, 1), 0);
  CHECK_INT(v6("64:ff9b::10.0.0.1", 0, 0), 0);
  CHECK_INT(v6("64:ff9b::10.0.0.1", 0, 1), 1);
  CHECK_INT(v6("64:ff9b::127.0.0.1", 0, 1), 0);
  CHECK_INT(v6("64:ff9b::93.184.216.34", 0, 0), 1);
  /* NAT64 local-use prefix 64:ff9b:1::/48: the IPv4 address around the
   * reserved octet 8 (RFC 6052 2.2): a9fe:a9fe is 169.254.169.254 */
  CHECK_INT(v6("64:ff9b:1:a9fe:a9:fe00::", 1, 1), 0);
  CHECK_INT(v6("64:ff9b:1:0a00:0:100::", 0, 0), 0);
  /* ... but a translator of the operator's may use any RFC 6052 layout
   * inside the /48 (here /64 behind subnet 1234, /96): a metadata address
   * under any of them is refused, and the prefix is a private network */
  CHECK_INT(v6("64:ff9b:1:1234:a9:fea9:fe00:0", 1, 1), 0);
  CHECK_INT(v6("64:ff9b:1::a9fe:a9fe", 1, 1), 0);
  CHECK_INT(v6("64:ff9b:1::7f00:1", 0, 1), 0);
  CHECK_INT(v6("64:ff9b:1:5db8:d8:2200::", 0, 0), 0);
  CHECK_INT(v6("64:ff9b:1:5db8:d8:2200::", 0, 1), 1);
  CHECK_INT(v6("64:ff9b:1::5db8:d822", 0, 1), 1);
  /* Teredo 2001::/32: the client's address inverted in the last 32 bits */
  CHECK_INT(v6("2001:0:1:2::5601:5601", 1, 1), 0);
  CHECK_INT(v6("2001:0:1:2::f5ff:fffe", 0, 0), 0); /* 10.0.0.1 */
  CHECK_INT(v6("2001:0:1:2::a247:27dd", 0, 0), 1); /* 93.184.216.34 */
  /* IPv4-compatible ::a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d */
  CHECK_INT(v6("::169.254.169.254", 1, 1), 0);
  CHECK_INT(v6("::10.0.0.1", 0, 0), 0);
  CHECK_INT(v6("::127.0.0.1", 0, 1), 0);
  CHECK_INT(v6("::ffff:0:169.254.169.254", 1, 1), 0);
  CHECK_INT(v6("::ffff:0:10.0.0.1", 0, 0), 0);
  /* 6to4 2002::/16: the relay's IPv4 address in bits 16-47 */
  CHECK_INT(v6("2002:a9fe:a9fe::1", 1, 1), 0);
  CHECK_INT(v6("2002:0a00:0001::1", 0, 0), 0);
  CHECK_INT(v6("2002:7f00:0001::1", 0, 1), 0);
  /* deprecated site-local fec0::/10 is a private network */
  CHECK_INT(v6("fec0::1", 0, 0), 0);
  CHECK_INT(v6("fec0::1", 0, 1), 1);
  /* metadata services outside link-local: AWS's IPv6 fd00:ec2::254,
   * Alibaba Cloud's 100.100.100.200 (inside 100.64/10) */
  CHECK_INT(v6("fd00:ec2::254", 1, 1), 0);
  CHECK_INT(v4("100.100.100.200", 1, 1), 0);
  CHECK_INT(v6("::ffff:100.100.100.200", 1, 1), 0);
}

static void test_loopback_named(void) {
  CHECK_INT(http_callback_url_loopback("http://127.0.0.1:9/cb"), 1);
  CHECK_INT(http_callback_url_loopback("http://[::1]:9/cb"), 1);
  CHECK_INT(http_callback_url_loopback("http://LocalHost/cb"), 1);
  CHECK_INT(http_callback_url_loopback("https://127.0.0.1.nip.io/cb"), 0);
  CHECK_INT(http_callback_url_loopback("https://example.org/cb"), 0);
}

static void test_allow(void) {
  const char *p = "https://RIO.example.nl/callbacks/";
  CHECK_INT(allowed("https://rio.example.nl/callbacks/42", p), 1);
  CHECK_INT(allowed("https://rio.example.nl:443/callbacks/42", p), 1);
  CHECK_INT(allowed("HTTPS://rio.EXAMPLE.nl/callbacks/", p), 1);
  CHECK_INT(allowed("https://rio.example.nl/callbacks/../admin", p), 0);
  CHECK_INT(allowed("https://rio.example.nl/other", p), 0);
  CHECK_INT(allowed("https://rio.example.nl:8443/callbacks/1", p), 0);
  CHECK_INT(allowed("http://rio.example.nl/callbacks/1", p), 0);
  CHECK_INT(allowed("https://rio.example.nl.evil.org/callbacks/1", p), 0);
  CHECK_INT(allowed("https://evil.org/https://rio.example.nl/callbacks/", p),
            0);
  /* a prefix without a trailing '/' ends at a segment */
  const char *q = "https://rio.example.nl/cb";
  CHECK_INT(allowed("https://rio.example.nl/cb", q), 1);
  CHECK_INT(allowed("https://rio.example.nl/cb/1", q), 1);
  CHECK_INT(allowed("https://rio.example.nl/cbx", q), 0);
  /* an origin alone takes every path of it */
  CHECK_INT(
      allowed("https://rio.example.nl/any/path", "https://rio.example.nl"), 1);
  /* the query is not part of the comparison */
  CHECK_INT(allowed("https://rio.example.nl/cb?x=1", q), 1);
}

/* Paths whose meaning depends on the receiver's decoding cannot be
 * compared with a prefix: refused (-1: the URL does not normalise), with
 * the reason, whatever the prefix. Each of these reaches /admin (or
 * /callbacks/../admin) at some server while it starts with /callbacks/ as
 * sent. Nothing else percent-encoded is refused. */
static void test_allow_hostile(void) {
  const char *p = "https://cb.example/hooks/";
  const char *hostile[] = {
      "https://cb.example/hooks/%2e%2e/admin",
      "https://cb.example/hooks/%2E%2E/admin",
      "https://cb.example/hooks/.%2e/admin",
      "https://cb.example/hooks/%2e./admin",
      "https://cb.example/hooks/..%2fadmin",
      "https://cb.example/hooks/..%2Fadmin",
      "https://cb.example/hooks%2f..%2fadmin",
      "https://cb.example/hooks/..%5cadmin",
      "https://cb.example/hooks/..\\admin",
      "https://cb.example/hooks/%252e%252e/admin",
      "https://cb.example/hooks/..;/admin",
      "https://cb.example/hooks/..;x=1/admin",
      "https://cb.example/hooks/.;/x",
      "https://cb.example/hooks/%2e",
  };
  for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
    char norm[HTTP_CALLBACK_NORM_MAX], why[160] = "";
    CHECK_MSG(allowed(hostile[i], p) == -1, "%s allowed", hostile[i]);
    CHECK_INT(http_callback_url_norm(hostile[i], norm, sizeof norm, why,
                                     sizeof why),
              CEB_EINVAL);
    CHECK_MSG(strstr(why, "path") != NULL, "%s: why '%s'", hostile[i], why);
  }
  /* a prefix holding one is refused too (a config error) */
  char norm[HTTP_CALLBACK_NORM_MAX];
  CHECK_INT(http_callback_url_norm("https://cb.example/a%2fb/", norm,
                                   sizeof norm, NULL, 0),
            CEB_EINVAL);
  /* other escapes, and dots that are no dot segment, stay allowed */
  CHECK_INT(allowed("https://cb.example/hooks/order%3A42", p), 1);
  CHECK_INT(allowed("https://cb.example/hooks/a%20b", p), 1);
  CHECK_INT(allowed("https://cb.example/hooks/v1.2/x", p), 1);
  CHECK_INT(allowed("https://cb.example/hooks/...", p), 1);
  CHECK_INT(allowed("https://cb.example/hooks/x;v=1", p), 1);
  /* an encoded unreserved letter is not decoded: it does not match */
  CHECK_INT(allowed("https://cb.example/%68ooks/x", p), 0);
}

static void test_check(void) {
  char why[160];
  CHECK_INT(
      http_callback_url_check("https://rio.example.nl/cb", why, sizeof why),
      CEB_OK);
  CHECK_INT(http_callback_url_check("http://10.0.0.1/cb", why, sizeof why),
            CEB_EINVAL);
  /* plain http to a name that only starts like a loopback address */
  CHECK_INT(
      http_callback_url_check("http://127.0.0.1.nip.io/cb", why, sizeof why),
      CEB_EINVAL);
  CHECK_INT(
      http_callback_url_check("http://127.evil.example/cb", why, sizeof why),
      CEB_EINVAL);
  CHECK_INT(http_callback_url_check("http://127.0.0.2:8/cb", why, sizeof why),
            CEB_OK);
  CHECK_INT(
      http_callback_url_check("https://u:p@rio.example.nl/", why, sizeof why),
      CEB_EINVAL);
}

int main(void) {
  test_addresses();
  test_embedded_v4();
  test_loopback_named();
  test_allow();
  test_allow_hostile();
  test_check();
  return ceb_test_done("unit_http_callback");
}
