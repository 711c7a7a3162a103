/* Serves the operator console's embedded files (see ceb_admin_ui.h). A
 * request path is only compared with the table's names, so no path can
 * reach the file system. */
#include "admin/ceb_admin_ui.h"

#include <microhttpd.h>
#include <string.h>

#include "admin/ceb_admin_internal.h"

int ceb_admin_ui_path(const char *url) {
  return strcmp(url, "/") == 0 || strcmp(url, "/ui") == 0 ||
         strncmp(url, "/ui/", 4) == 0;
}

static const char *type_of(const char *path) {
  static const struct {
    const char *ext, *type;
  } types[] = {{".html", "text/html; charset=utf-8"},
               {".css", "text/css; charset=utf-8"},
               {".js", "text/javascript; charset=utf-8"},
               {".svg", "image/svg+xml"}};
  const char *dot = strrchr(path, '.');
  for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
    if (strcmp(dot, types[i].ext) == 0) return types[i].type;
  return "application/octet-stream";
}

int ceb_admin_ui(struct MHD_Connection *c, const char *url) {
  if (strcmp(url, "/") == 0 || strcmp(url, "/ui") == 0) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    ceb_admin_headers(r);
    MHD_add_response_header(r, "Location", "/ui/");
    int rc = MHD_queue_response(c, MHD_HTTP_FOUND, r);
    MHD_destroy_response(r);
    return rc;
  }
  const char *want = strcmp(url, "/ui/") == 0 ? "/ui/index.html" : url;
  for (const ceb_embedded_file *f = ceb_admin_ui_files; f->path; f++) {
    if (strcmp(f->path, want) != 0) continue;
    struct MHD_Response *r = MHD_create_response_from_buffer(
        f->len, (void *)f->data, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    ceb_admin_headers(r);
    MHD_add_response_header(r, "Content-Type", type_of(f->path));
    /* the files change only with the binary: revalidate, never store */
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    int rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
  }
  return ceb_admin_problem(c, 404, "not_found", "no such console file");
}
