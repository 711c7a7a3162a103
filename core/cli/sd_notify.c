#include "cli/sd_notify.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void ceb_sd_notify(const char *state) {
  const char *path = getenv("NOTIFY_SOCKET");
  if (!path || !*path || (path[0] != '/' && path[0] != '@'))
    return;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t len = strlen(path);
  if (len >= sizeof sa.sun_path)
    return;
  memcpy(sa.sun_path, path, len);
  if (sa.sun_path[0] == '@')
    sa.sun_path[0] = '\0'; /* abstract namespace */
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return;
  (void)sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
  close(fd);
}

long long ceb_sd_watchdog_usec(void) {
  const char *usec = getenv("WATCHDOG_USEC");
  const char *pid = getenv("WATCHDOG_PID");
  if (!usec || !*usec)
    return 0;
  if (pid && *pid && atoll(pid) != (long long)getpid())
    return 0;
  long long v = atoll(usec);
  return v > 0 ? v : 0;
}
