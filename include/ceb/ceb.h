/* cebridge SDK: the one header a plugin includes. */
#ifndef CEB_CEB_H
#define CEB_CEB_H

#include "codec.h"
#include "config.h"
#include "event.h"
#include "plugin.h"
#include "semver.h"
#include "status.h"
#include "tls.h"
#include "validate.h"

#define CEB_VERSION "0.1.0"

#endif
