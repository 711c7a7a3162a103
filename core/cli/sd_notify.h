/* systemd notification for `cebridge run` (Type=notify units): libsystemd's
 * sd_notify with -DCEB_WITH_SYSTEMD=ON (the default); without it both
 * functions do nothing and the unit needs Type=simple. Control thread. */
#ifndef CEB_SD_NOTIFY_H
#define CEB_SD_NOTIFY_H

/* Sends state (e.g. "READY=1"); no-op when NOTIFY_SOCKET is unset. */
void ceb_sd_notify(const char *state);
/* Microseconds of the systemd watchdog interval, 0 when not enabled (or
 * meant for another process: WATCHDOG_PID). */
long long ceb_sd_watchdog_usec(void);

#endif
