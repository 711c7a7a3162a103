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

#endif
