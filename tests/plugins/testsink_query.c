/* The exported entry point of testsink.so (not linked into tests). */
#include "testsink.h"

CEB_PLUGIN_DEFINE(ceb_testsink_plugin)
