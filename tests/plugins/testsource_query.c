/* The exported entry point of testsource.so (not linked into tests). */
#include "testsource.h"

CEB_PLUGIN_DEFINE(ceb_testsource_plugin)
