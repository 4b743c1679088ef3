// Catch2 2.x needs one translation unit with the runner; Catch2 3 links Catch2WithMain instead.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
