#include "cli/sd_notify.h"

#if CEB_WITH_SYSTEMD
#include <stdint.h>
#include <systemd/sd-daemon.h>

void ceb_sd_notify(const char *state) {
  /* < 0 only on a socket error: nothing a supervisor-less run can do */
  (void)sd_notify(0, state);
}

long long ceb_sd_watchdog_usec(void) {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? (long long)usec : 0;
}

#else

void ceb_sd_notify(const char *state) {
  (void)state;
}

long long ceb_sd_watchdog_usec(void) {
  return 0;
}

#endif
