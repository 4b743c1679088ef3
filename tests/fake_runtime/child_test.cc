#include "tests/catch.h"
