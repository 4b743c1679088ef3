// Catch2 2.x (Debian 12) and 3.x (Homebrew) behind one include.
// SOAKD_CATCH_MAJOR comes from cmake/Dependencies.cmake (the version linked); when
// both versions' headers are on the include path, guessing by __has_include would
// pick headers that do not match the library.
#pragma once
#if !defined(SOAKD_CATCH_MAJOR)
#if __has_include(<catch2/catch_test_macros.hpp>)
#define SOAKD_CATCH_MAJOR 3
#else
#define SOAKD_CATCH_MAJOR 2
#endif
#endif

#if SOAKD_CATCH_MAJOR >= 3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
