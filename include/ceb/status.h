/* cebridge public SDK: the one error convention.
 *
 * Every function of the SDK and of the host table that can fail returns an
 * int: CEB_OK (0) or a negative ceb_status. Nothing else is an error code. */
#ifndef CEB_STATUS_H
#define CEB_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ceb_status {
  CEB_OK = 0,
  CEB_EINVAL = -1,       /* invalid argument or malformed input */
  CEB_ENOMEM = -2,       /* allocation failed */
  CEB_EIO = -3,          /* I/O, storage or network failure */
  CEB_EBUSY = -4,        /* backpressure: try again later, nothing was taken */
  CEB_EDUPLICATE = -5,   /* already accepted earlier (dedupe hit) */
  CEB_ENOTFOUND = -6,    /* no such object */
  CEB_EUNSUPPORTED = -7, /* not supported by this build, plugin or peer */
  CEB_ESHUTDOWN = -8,    /* the host is draining: nothing new is accepted */
  CEB_ETIMEOUT = -9,     /* a deadline passed */
  CEB_EAUTH = -10,       /* authentication failed */
  CEB_EFORBIDDEN = -11,  /* authenticated but not allowed */
  CEB_ECONFIG = -12,     /* configuration error */
  CEB_ETOOLARGE = -13,   /* over a size limit */
  CEB_EVALIDATION =
      -14, /* well-formed but fails a rule (CloudEvents, profile, contract) */
  CEB_ECONFLICT =
      -15, /* conflicts with stored state (idempotency, contract register) */
  CEB_EABI = -16,      /* plugin ABI mismatch */
  CEB_EINTERNAL = -17, /* a bug: logged with detail */
  CEB_EMAPPING =
      -18 /* a jq mapping failed or output no valid event (ABI 1.2) */
} ceb_status;

/* Stable, static English text for a status ("invalid argument", ...).
 * Unknown values give "unknown error". Thread-safe; never returns NULL. */
const char *ceb_strerror(int status);

/* Stable short machine name for a status ("EINVAL", ...), for logs and JSON. */
const char *ceb_status_name(int status);

/* Detail for a failed decode or parse. Filled by the SDK; caller-owned
 * storage (usually on the stack). `code` is a stable machine code such as
 * "ce.attr.missing"; `message` is for humans; `index` is the position of the
 * failing element in a batch (-1 when not a batch). */
typedef struct ceb_error {
  int status;
  int index;
  char code[48];
  char message[256];
} ceb_error;

/* Clears an error to {CEB_OK, -1, "", ""}. NULL is allowed and ignored. */
void ceb_error_clear(ceb_error *err);

#ifdef __cplusplus
}
#endif
#endif
