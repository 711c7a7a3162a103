/* Process and build facts for /metrics, read at scrape time: the standard
 * process_* families of the Prometheus client libraries (from /proc) and
 * cebridge_build_info. Thread: any (the registry locks). */
#ifndef CEB_METRICS_PROCESS_H
#define CEB_METRICS_PROCESS_H

#include "metrics/ceb_metrics.h"

/* Sets process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds and
 * process_start_time_seconds from /proc/self. A value /proc does not give
 * is left out (never reported as 0). Returns how many were set. */
int ceb_metrics_process_refresh(ceb_metrics *m);

/* cebridge_build_info{version="…",abi="MAJOR.MINOR"} 1. */
void ceb_metrics_build_info(ceb_metrics *m);

#endif
