/* The operator console: static files (core/admin/ui/, compiled in by
 * cmake/CebEmbed.cmake) served under /ui/ by the admin API. The page holds
 * no data: everything it shows comes from /v1/ with the operator's token,
 * so the files themselves are served without one (Host still checked). */
#ifndef CEB_ADMIN_UI_H
#define CEB_ADMIN_UI_H

#include <stddef.h>

struct MHD_Connection;

typedef struct ceb_embedded_file {
  const char *path; /* "/ui/app.js"; NULL ends the table */
  const unsigned char *data;
  size_t len;
} ceb_embedded_file;

/* Generated (ceb_admin_ui_files.c); static, read-only. */
extern const ceb_embedded_file ceb_admin_ui_files[];

/* The policy every admin response carries: the console's own files only,
 * no inline script or style, no framing, no form posts, fetch to this
 * origin only. */
#define CEB_ADMIN_CSP                                                          \
  "default-src 'none'; script-src 'self'; style-src 'self'; "                  \
  "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "         \
  "base-uri 'none'; form-action 'none'"

/* 1 when url is the console's ("/", "/ui", "/ui/..."). */
int ceb_admin_ui_path(const char *url);
/* Answers GET/HEAD of a console url: the file, a redirect to /ui/, or 404.
 * MHD's threads; reads only the static table. Returns MHD_YES/MHD_NO. */
int ceb_admin_ui(struct MHD_Connection *c, const char *url);

#endif
