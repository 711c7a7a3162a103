/* Callback URLs (X-Callback, docs/integration-guide.md "Callbacks"): the
 * one check of a client's URL, at ingest by the intermediary (a bad one is
 * a 400 naming the header) and again by the webhook sink before it sends
 * to one (callback_urls = true). Reentrant. */
#ifndef HTTP_CALLBACK_H
#define HTTP_CALLBACK_H

#include <stddef.h>

/* Longest callback URL accepted (bytes). */
#define HTTP_CALLBACK_URL_MAX 2048

/* CEB_OK when url is an absolute https URL, or http to a loopback address
 * (127.0.0.0/8, ::1, localhost), of at most HTTP_CALLBACK_URL_MAX bytes,
 * without control characters, spaces, user info or a fragment; else
 * CEB_EINVAL with a one-line reason in why (never quoting the URL). */
int http_callback_url_check(const char *url, char *why, size_t whylen);

/* Longest normalised URL (http_callback_url_norm). */
#define HTTP_CALLBACK_NORM_MAX (HTTP_CALLBACK_URL_MAX + 64)

/* The comparable form of url: "scheme://host:port/path" with scheme and
 * host in lower case, the port always written, dot segments removed (as
 * libcurl sends it), no query. CEB_OK; CEB_EINVAL when url does not parse,
 * does not fit in n bytes, or its path means different things to different
 * servers (why says which, when why is not NULL): a percent-encoded '.',
 * '/', '\' or '%' (%2e, %2f, %5c, %25, any case), a '\', or a dot segment
 * with a ';' parameter ("..;"). The prefix compare is on the path as sent,
 * the receiver routes on its own decoding of it: %2e%2e or ..%2f under an
 * allowed prefix reaches the parent at a server that decodes before it
 * resolves dot segments, \ is '/' to some, "..;" is ".." to Tomcat.
 * Refused rather than decoded: what the receiver does with them cannot be
 * known, and a client has no need of them in a callback URL. */
int http_callback_url_norm(const char *url, char *out, size_t n, char *why,
                           size_t whylen);

/* 1 when the normalised URL norm lies under one of the normalised prefixes
 * (callback_allow): the same origin, and a path equal to the prefix's or
 * continuing it at a '/' (a prefix "https://h:443/cb" takes /cb and /cb/x,
 * not /cbx). */
int http_callback_url_allowed(const char *norm, char *const *prefixes,
                              size_t n);

/* 1 when the URL's host is a loopback name (127.0.0.0/8, [::1],
 * localhost): the only hosts whose loopback address a callback may reach. */
int http_callback_url_loopback(const char *url);

struct sockaddr;

/* Why a callback may not connect to an address (docs/operator-guide.md
 * "Client callbacks"): a client chooses the URL, so without this a client
 * could make the bridge POST into the institution's own network
 * (server-side request forgery) or to a cloud metadata service. Checked at
 * connect time on the address libcurl resolved (so a name that resolves,
 * or rebinds, to an inner address is caught too). Always refused: the
 * unspecified, link-local (169.254.0.0/16, fe80::/10, where metadata
 * services live), multicast, broadcast and reserved ranges. Refused unless
 * allow_private: private networks (10/8, 172.16/12, 192.168/16, the shared
 * 100.64/10, 198.18/15, fc00::/7). Loopback only when loopback_named (the
 * URL itself names a loopback host). IPv6 forms that carry an IPv4
 * address (mapped, translated, IPv4-compatible, NAT64 64:ff9b::/96, 6to4,
 * Teredo) are judged as that IPv4 address; the local-use NAT64 prefix
 * 64:ff9b:1::/48 as a private network, or never when an address it may
 * carry is one. Cloud metadata addresses outside link-local
 * (100.100.100.200, fd00:ec2::254) are never reached. CEB_OK, or CEB_EFORBIDDEN with the reason (and the
 * address) in why. Reentrant. */
int http_callback_addr_check(const struct sockaddr *sa, int loopback_named,
                             int allow_private, char *why, size_t whylen);

#endif
