# Every dependency comes from the system package manager (Debian apt or Homebrew).
# Nothing is vendored or downloaded at build time.
find_package(PkgConfig REQUIRED)
pkg_check_modules(UV REQUIRED IMPORTED_TARGET libuv)   # Debian ships no CMake package for libuv
find_package(CURL REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(spdlog REQUIRED)
find_package(Threads REQUIRED)

if(SOAKD_BUILD_TESTS)
  # Debian 12 ships Catch2 2.13 (catch2/catch.hpp, Catch2::Catch2);
  # Homebrew ships Catch2 3 (catch2/catch_test_macros.hpp, Catch2::Catch2WithMain).
  find_package(Catch2 REQUIRED)
  if(Catch2_VERSION VERSION_GREATER_EQUAL 3)
    set(SOAKD_CATCH_MAJOR 3)
  else()
    set(SOAKD_CATCH_MAJOR 2)
  endif()
  message(STATUS "Catch2 ${Catch2_VERSION} (major ${SOAKD_CATCH_MAJOR})")
endif()
