/* systemd notification (sd_notify protocol) for `cebridge run`, written
 * out rather than linked from libsystemd: one datagram to $NOTIFY_SOCKET.
 * Control thread. */
#ifndef CEB_SD_NOTIFY_H
#define CEB_SD_NOTIFY_H

/* Sends state (e.g. "READY=1"); no-op when NOTIFY_SOCKET is unset. */
void ceb_sd_notify(const char *state);
/* Microseconds of the systemd watchdog interval, 0 when not enabled. */
long long ceb_sd_watchdog_usec(void);

#endif
