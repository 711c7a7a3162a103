#include <ceb/status.h>

#include <string.h>

typedef struct status_text {
  int status;
  const char *name;
  const char *text;
} status_text;

static const status_text k_status[] = {
    {CEB_OK, "OK", "success"},
    {CEB_EINVAL, "EINVAL", "invalid argument or malformed input"},
    {CEB_ENOMEM, "ENOMEM", "out of memory"},
    {CEB_EIO, "EIO", "I/O, storage or network failure"},
    {CEB_EBUSY, "EBUSY", "busy: backpressure, try again later"},
    {CEB_EDUPLICATE, "EDUPLICATE", "already accepted"},
    {CEB_ENOTFOUND, "ENOTFOUND", "not found"},
    {CEB_EUNSUPPORTED, "EUNSUPPORTED", "not supported"},
    {CEB_ESHUTDOWN, "ESHUTDOWN", "shutting down"},
    {CEB_ETIMEOUT, "ETIMEOUT", "timed out"},
    {CEB_EAUTH, "EAUTH", "authentication failed"},
    {CEB_EFORBIDDEN, "EFORBIDDEN", "not allowed"},
    {CEB_ECONFIG, "ECONFIG", "configuration error"},
    {CEB_ETOOLARGE, "ETOOLARGE", "too large"},
    {CEB_EVALIDATION, "EVALIDATION", "validation failed"},
    {CEB_ECONFLICT, "ECONFLICT", "conflicts with stored state"},
    {CEB_EABI, "EABI", "plugin ABI mismatch"},
    {CEB_EINTERNAL, "EINTERNAL", "internal error"},
    {CEB_EMAPPING, "EMAPPING", "mapping failed"},
};

static const status_text *lookup(int status) {
  for (size_t i = 0; i < sizeof k_status / sizeof k_status[0]; i++)
    if (k_status[i].status == status) return &k_status[i];
  return NULL;
}

const char *ceb_strerror(int status) {
  const status_text *t = lookup(status);
  return t ? t->text : "unknown error";
}

const char *ceb_status_name(int status) {
  const status_text *t = lookup(status);
  return t ? t->name : "EUNKNOWN";
}

void ceb_error_clear(ceb_error *err) {
  if (!err) return;
  memset(err, 0, sizeof *err);
  err->status = CEB_OK;
  err->index = -1;
}
