/* The engine's live-delivery registry: membership survives growth and
 * tombstones, deleted pointers are not members, and a second delete is
 * refused (that is how a double settle is detected). */
#include <ceb/status.h>

#include "ceb_test.h"
#include "delivery/engine_internal.h"

int main(void) {
  ptrset s = {0};
  static int objs[5000];
  CHECK(!cebe_ptrset_has(&s, &objs[0]));
  CHECK_INT(cebe_ptrset_del(&s, &objs[0]), CEB_ENOTFOUND);
  for (int i = 0; i < 5000; i++)
    CHECK_INT(cebe_ptrset_add(&s, &objs[i]), CEB_OK);
  CHECK_INT(s.count, 5000);
  int all = 1;
  for (int i = 0; i < 5000; i++)
    all &= cebe_ptrset_has(&s, &objs[i]);
  CHECK(all);
  for (int i = 0; i < 5000; i += 2)
    CHECK_INT(cebe_ptrset_del(&s, &objs[i]), CEB_OK);
  CHECK_INT(cebe_ptrset_del(&s, &objs[0]), CEB_ENOTFOUND);
  int odd = 1, even = 0;
  for (int i = 0; i < 5000; i++) {
    if (i % 2)
      odd &= cebe_ptrset_has(&s, &objs[i]);
    else
      even |= cebe_ptrset_has(&s, &objs[i]);
  }
  CHECK(odd);
  CHECK(!even);
  /* churn: many add/delete cycles keep the table bounded */
  size_t cap = s.cap;
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < 5000; i += 2)
      cebe_ptrset_add(&s, &objs[i]);
    for (int i = 0; i < 5000; i += 2)
      cebe_ptrset_del(&s, &objs[i]);
  }
  CHECK_INT(s.count, 2500);
  CHECK(s.cap <= cap * 2);
  cebe_ptrset_free(&s);
  return ceb_test_done("unit_delivery_ptrset");
}
