/* Shared between the admin server and its endpoint handlers. */
#ifndef CEB_ADMIN_INTERNAL_H
#define CEB_ADMIN_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "admin/ceb_admin.h"

struct MHD_Connection;

/* Queue a response; return MHD_YES/MHD_NO as int. */
int ceb_admin_reply(struct MHD_Connection *c, int status,
                    const char *content_type, const char *body, size_t len);
/* Steals the reference to body. */
int ceb_admin_reply_json(struct MHD_Connection *c, int status, json_t *body);
int ceb_admin_problem(struct MHD_Connection *c, int status, const char *code,
                      const char *detail);

int ceb_admin_metrics(const ceb_admin_view *view, struct MHD_Connection *c);
/* path is the part after "/v1" ("/routes", "/dlq/3", ...). */
int ceb_admin_v1(const ceb_admin_view *view, struct MHD_Connection *c,
                 const char *method, const char *path);

#endif
