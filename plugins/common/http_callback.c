/* Callback URL checks (http_callback.h). Parsed with libcurl's URL API, the
 * parser the sink sends with, so that what is checked is what is sent. */
#include "http_callback.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <ceb/status.h>
#include <curl/curl.h>

/* A loopback name: an IPv4 literal in 127.0.0.0/8 (a literal: a name such
 * as 127.0.0.1.example.org is not one), [::1] or localhost. */
static int loopback_host(const char *host) {
  struct in_addr a;
  /* curl gives an IPv6 literal in brackets */
  return (inet_pton(AF_INET, host, &a) == 1 &&
          (ntohl(a.s_addr) >> 24) == 127) ||
         strcmp(host, "[::1]") == 0 || strcasecmp(host, "localhost") == 0;
}

int http_callback_url_check(const char *url, char *why, size_t whylen) {
  size_t n = url ? strlen(url) : 0;
  if (n == 0) {
    snprintf(why, whylen, "empty");
    return CEB_EINVAL;
  }
  if (n > HTTP_CALLBACK_URL_MAX) {
    snprintf(why, whylen, "longer than %d bytes", HTTP_CALLBACK_URL_MAX);
    return CEB_EINVAL;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)url[i];
    if (c <= 0x20 || c >= 0x7f) {
      snprintf(why, whylen,
               "contains a control character, a space or a non-ASCII byte "
               "(percent-encode it)");
      return CEB_EINVAL;
    }
  }
  CURLU *u = curl_url();
  char *scheme = NULL, *host = NULL, *user = NULL, *frag = NULL;
  int rc = CEB_EINVAL;
  if (!u) {
    snprintf(why, whylen, "out of memory");
    return CEB_ENOMEM;
  }
  if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
    snprintf(why, whylen, "not an absolute URL");
  } else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
    snprintf(why, whylen, "must not carry user information");
  } else if (curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0) == CURLUE_OK) {
    snprintf(why, whylen, "must not carry a fragment");
  } else if (strcasecmp(scheme, "https") == 0) {
    rc = CEB_OK;
  } else if (strcasecmp(scheme, "http") == 0 && loopback_host(host)) {
    rc = CEB_OK;
  } else if (strcasecmp(scheme, "http") == 0) {
    snprintf(why, whylen,
             "http is allowed only to a loopback address; use "
             "https");
  } else {
    snprintf(why, whylen, "scheme must be https");
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(user);
  curl_free(frag);
  curl_url_cleanup(u);
  return rc;
}

/* 1 when path (as sent, percent-encoded) holds a form whose meaning
 * depends on the receiving server (http_callback_url_norm), with the
 * reason in why. */
static int path_ambiguous(const char *path, char *why, size_t whylen) {
  static const char *const encoded[] = {"%2e", "%2f", "%5c", "%25"};
  static const char *const names[] = {"'.'", "'/'", "'\\'", "'%'"};
  for (const char *p = path; *p; p++) {
    if (*p == '\\') {
      snprintf(why, whylen, "the path holds a '\\' (a '/' to some servers)");
      return 1;
    }
    for (size_t i = 0; *p == '%' && i < 4; i++)
      if (strncasecmp(p, encoded[i], 3) == 0) {
        snprintf(why, whylen,
                 "the path holds a percent-encoded %s (%s): its meaning "
                 "depends on the receiving server",
                 names[i], encoded[i]);
        return 1;
      }
    /* a segment of dots with a ';' parameter: "..;" is ".." to Tomcat */
    if (*p == '/' && p[1] == '.') {
      size_t dots = strspn(p + 1, ".");
      if (dots <= 2 && p[1 + dots] == ';') {
        snprintf(why, whylen,
                 "the path holds a dot segment with a ';' parameter");
        return 1;
      }
    }
  }
  return 0;
}

int http_callback_url_norm(const char *url, char *out, size_t n, char *why,
                           size_t whylen) {
  char ignored[8];
  if (!why) {
    why = ignored;
    whylen = sizeof ignored;
  }
  snprintf(why, whylen, "does not parse");
  CURLU *u = curl_url();
  if (!u) return CEB_ENOMEM;
  char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
  int rc = CEB_EINVAL;
  if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK &&
      !path_ambiguous(path, why, whylen)) {
    for (char *p = scheme; *p; p++)
      *p = (char)tolower((unsigned char)*p);
    for (char *p = host; *p; p++)
      *p = (char)tolower((unsigned char)*p);
    int w = snprintf(out, n, "%s://%s:%s%s", scheme, host, port, path);
    if (w > 0 && (size_t)w < n)
      rc = CEB_OK;
    else
      snprintf(why, whylen, "too long");
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_free(path);
  curl_url_cleanup(u);
  return rc;
}

int http_callback_url_allowed(const char *norm, char *const *prefixes,
                              size_t n) {
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(prefixes[i]);
    if (strncmp(norm, prefixes[i], len) != 0) continue;
    /* the whole prefix matched: the path must go on at a segment's start */
    if (norm[len] == '\0' || norm[len] == '/' ||
        (len > 0 && prefixes[i][len - 1] == '/'))
      return 1;
  }
  return 0;
}

int http_callback_url_loopback(const char *url) {
  CURLU *u = curl_url();
  char *host = NULL;
  int yes = 0;
  if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
    yes = loopback_host(host);
  curl_free(host);
  curl_url_cleanup(u);
  return yes;
}

/* The class of an IPv4 address (host order) for callbacks. */
enum addr_class { ADDR_PUBLIC, ADDR_PRIVATE, ADDR_LOOPBACK, ADDR_NEVER };

static enum addr_class v4_class(uint32_t a, const char **what) {
  static const struct {
    uint32_t net, mask;
    enum addr_class c;
    const char *what;
  } table[] = {
      {0x00000000, 0xff000000, ADDR_NEVER, "unspecified (0.0.0.0/8)"},
      {0x7f000000, 0xff000000, ADDR_LOOPBACK, "loopback (127.0.0.0/8)"},
      {0xa9fe0000, 0xffff0000, ADDR_NEVER, "link-local (169.254.0.0/16)"},
      {0x646464c8, 0xffffffff, ADDR_NEVER,
       "metadata service (100.100.100.200)"},
      {0xe0000000, 0xf0000000, ADDR_NEVER, "multicast (224.0.0.0/4)"},
      {0xf0000000, 0xf0000000, ADDR_NEVER, "reserved (240.0.0.0/4)"},
      {0x0a000000, 0xff000000, ADDR_PRIVATE, "private (10.0.0.0/8)"},
      {0xac100000, 0xfff00000, ADDR_PRIVATE, "private (172.16.0.0/12)"},
      {0xc0a80000, 0xffff0000, ADDR_PRIVATE, "private (192.168.0.0/16)"},
      {0x64400000, 0xffc00000, ADDR_PRIVATE, "shared (100.64.0.0/10)"},
      {0xc6120000, 0xfffe0000, ADDR_PRIVATE, "benchmarking (198.18.0.0/15)"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if ((a & table[i].mask) == table[i].net) {
      *what = table[i].what;
      return table[i].c;
    }
  *what = "public";
  return ADDR_PUBLIC;
}

static uint32_t v4_at(const unsigned char *b, int i0, int i1, int i2, int i3) {
  return (uint32_t)b[i0] << 24 | (uint32_t)b[i1] << 16 | (uint32_t)b[i2] << 8 |
         b[i3];
}

/* The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215): the operator's
 * translator may use any RFC 6052 prefix length inside it (/48, /56, /64,
 * /96), so where its IPv4 address sits cannot be known from the address.
 * Judged as a private network (the translator is the operator's) unless
 * one of the layouts carries an address a callback may never reach or a
 * loopback address; 0.0.0.0/8 under a layout is the zero padding of
 * another layout, not a finding. */
static enum addr_class nat64_local_class(const unsigned char *b,
                                         const char **what) {
  static const int at[4][4] = {
      {6, 7, 9, 10}, {7, 9, 10, 11}, {9, 10, 11, 12}, {12, 13, 14, 15}};
  enum addr_class worst = ADDR_PRIVATE;
  *what = "local-use NAT64 (64:ff9b:1::/48)";
  for (size_t i = 0; i < 4; i++) {
    const char *w;
    uint32_t a = v4_at(b, at[i][0], at[i][1], at[i][2], at[i][3]);
    if (a >> 24 == 0) continue;
    enum addr_class c = v4_class(a, &w);
    if (c == ADDR_NEVER || (c == ADDR_LOOPBACK && worst != ADDR_NEVER)) {
      worst = c;
      *what = w;
    }
  }
  return worst;
}

/* An IPv6 address that carries an IPv4 address some translator, tunnel or
 * stack delivers to is judged as that IPv4 address: otherwise
 * 64:ff9b::169.254.169.254 through a NAT64 gateway would reach the
 * metadata service. */
static enum addr_class v6_class(const unsigned char *b, const char **what) {
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
                                           0, 0, 0, 0, 0xff, 0xff};
  static const unsigned char translated[12] = {0, 0, 0,    0,    0, 0,
                                               0, 0, 0xff, 0xff, 0, 0};
  static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0,
                                          0, 0,    0,    0,    0, 0};
  static const unsigned char nat64_local[6] = {0, 0x64, 0xff, 0x9b, 0, 1};
  static const unsigned char aws_imds[16] = {
      0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0x54};
  static const unsigned char zero[16] = {0};
  if (memcmp(b, mapped, 12) == 0 || memcmp(b, translated, 12) == 0 ||
      memcmp(b, nat64, 12) == 0)
    return v4_class(v4_at(b, 12, 13, 14, 15), what);
  if (memcmp(b, zero, 15) == 0 && b[15] == 1) {
    *what = "loopback (::1)";
    return ADDR_LOOPBACK;
  }
  if (memcmp(b, zero, 16) == 0) {
    *what = "unspecified (::)";
    return ADDR_NEVER;
  }
  if (memcmp(b, zero, 12) == 0) /* IPv4-compatible ::a.b.c.d */
    return v4_class(v4_at(b, 12, 13, 14, 15), what);
  if (memcmp(b, nat64_local, 6) == 0) return nat64_local_class(b, what);
  if (b[0] == 0x20 && b[1] == 0x02) /* 6to4 2002::/16 */
    return v4_class(v4_at(b, 2, 3, 4, 5), what);
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
    /* Teredo 2001::/32: the client's IPv4 address, inverted, in the last
     * 32 bits (RFC 4380 4) */
    uint32_t a = ~v4_at(b, 12, 13, 14, 15);
    return v4_class(a, what);
  }
  if (memcmp(b, aws_imds, 16) == 0) {
    *what = "metadata service (fd00:ec2::254)";
    return ADDR_NEVER;
  }
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) {
    *what = "site-local (fec0::/10)";
    return ADDR_PRIVATE;
  }
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) {
    *what = "link-local (fe80::/10)";
    return ADDR_NEVER;
  }
  if (b[0] == 0xff) {
    *what = "multicast (ff00::/8)";
    return ADDR_NEVER;
  }
  if ((b[0] & 0xfe) == 0xfc) {
    *what = "unique local (fc00::/7)";
    return ADDR_PRIVATE;
  }
  *what = "public";
  return ADDR_PUBLIC;
}

int http_callback_addr_check(const struct sockaddr *sa, int loopback_named,
                             int allow_private, char *why, size_t whylen) {
  char text[INET6_ADDRSTRLEN] = "?";
  const char *what = "unknown family";
  enum addr_class c = ADDR_NEVER;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    c = v4_class(ntohl(in->sin_addr.s_addr), &what);
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    c = v6_class(in6->sin6_addr.s6_addr, &what);
  }
  if (c == ADDR_PUBLIC || (c == ADDR_PRIVATE && allow_private) ||
      (c == ADDR_LOOPBACK && loopback_named))
    return CEB_OK;
  snprintf(why, whylen, "the callback's host resolved to %s, a %s address%s",
           text, what,
           c == ADDR_PRIVATE ? " (callback_private_networks = false)"
           : c == ADDR_LOOPBACK
               ? " reached by a name that is not a loopback host"
               : "");
  return CEB_EFORBIDDEN;
}
