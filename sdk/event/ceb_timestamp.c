/* RFC 3339 date-time: parsing to epoch milliseconds and formatting. */
#include "ceb_event_internal.h"

#include <ceb/validate.h>

#include <stdio.h>

static int digits(const char *s, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 1;
}

static int is_leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m) {
  static const int k[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : k[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int ceb_timestamp_parse(const char *s, int64_t *ms_out) {
  int y, mo, d, h, mi, sec, oh = 0, om = 0;
  if (!s || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
      s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) ||
      s[16] != ':' || !digits(s + 17, 2, &sec))
    return CEB_EINVAL;
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
      mi > 59 || sec > 60) /* 60: leap second */
    return CEB_EINVAL;
  const char *p = s + 19;
  int frac_ms = 0;
  if (*p == '.') {
    const char *start = ++p;
    while (*p >= '0' && *p <= '9') {
      if (p - start < 3) frac_ms = frac_ms * 10 + (*p - '0');
      p++;
    }
    if (p == start) return CEB_EINVAL;
    for (long n = p - start; n < 3; n++)
      frac_ms *= 10;
  }
  int sign = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    sign = *p == '+' ? 1 : -1;
    if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) ||
        oh > 23 || om > 59)
      return CEB_EINVAL;
    p += 6;
  } else {
    return CEB_EINVAL;
  }
  if (*p) return CEB_EINVAL;
  int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
  secs -= sign * (oh * 3600 + om * 60);
  if (ms_out) *ms_out = secs * 1000 + frac_ms;
  return CEB_OK;
}

int ceb_valid_timestamp(const char *rfc3339) {
  return ceb_timestamp_parse(rfc3339, NULL) == CEB_OK;
}

void ceb_timestamp_format(int64_t ms, char *buf, size_t size) {
  if (!buf || !size) return;
  int64_t secs = ms / 1000, rem = ms % 1000;
  if (rem < 0) {
    rem += 1000;
    secs--;
  }
  int64_t days = secs / 86400, sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    days--;
  }
  /* civil_from_days (Howard Hinnant). */
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  snprintf(buf, size, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03lldZ",
           (long long)y, (long long)m, (long long)d, (long long)(sod / 3600),
           (long long)(sod / 60 % 60), (long long)(sod % 60), (long long)rem);
}
