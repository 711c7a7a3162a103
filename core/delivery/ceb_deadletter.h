/* Dead letters: the original CloudEvent (same id, source, type, data) plus
 * these extensions, whose names are valid CloudEvents attribute names
 * (a-z0-9, at most 20 characters). Times are RFC 3339 UTC.
 *
 *   deadroute     route the event died on
 *   deadsink      sink section it was being delivered to
 *   deadreason    why it died: "rejected" (the sink refused it for good),
 *                 "maxattempts" (retries used up), "deadline" (the route's
 *                 deadline since acceptance passed)
 *   deadcause     the last attempt's reason code ("http.400", "timeout")
 *   deadstatus    the last protocol status code (integer; absent when none)
 *   deadattempts  attempts made (integer)
 *   deadfirstat   time of the first attempt
 *   deadlastat    time of the last attempt
 *   deaderror     the last error text, truncated to 512 bytes
 *
 * Receipts (route `receipts = SINK[:topic]`) are CloudEvents of type
 * <receipts.type_prefix>.done / .failed, source CEB_RECEIPT_SOURCE,
 * subject = the original event id, id = "<route>.<seq>.<done|failed>"
 * (stable, so receivers dedupe), data (JSON): {"route", "id", "source",
 * "type", "state", "attempts", "reason"}. */
#ifndef CEB_DEADLETTER_H
#define CEB_DEADLETTER_H

#define CEB_DL_ROUTE "deadroute"
#define CEB_DL_SINK "deadsink"
#define CEB_DL_REASON "deadreason"
#define CEB_DL_CAUSE "deadcause"
#define CEB_DL_STATUS "deadstatus"
#define CEB_DL_ATTEMPTS "deadattempts"
#define CEB_DL_FIRST_AT "deadfirstat"
#define CEB_DL_LAST_AT "deadlastat"
#define CEB_DL_ERROR "deaderror"
#define CEB_DL_ERROR_MAX 512

/* Dead reasons. */
#define CEB_DEAD_REJECTED "rejected"
#define CEB_DEAD_EXHAUSTED "maxattempts"
#define CEB_DEAD_DEADLINE "deadline"

#define CEB_RECEIPT_SOURCE "urn:cebridge:receipts"

#endif
