// Former name of daemon/recipe_store.h, kept only while daemon/soakctl_cli.cc
// (being split by command) still includes it; delete it once nothing does.
#pragma once

#include "daemon/recipe_store.h"
