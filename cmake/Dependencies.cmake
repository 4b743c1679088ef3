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

# What spdlog (with its fmt) and libuv ask of a file that includes their
# headers, without linking them. soak_core and the precompiled header compile
# with it; only the libraries that log (soak_log) or run the event loop link the
# libraries themselves, so a program that does neither, soakctl, loads neither:
# fewer libraries to load and relocate at each start (docs/DESIGN.md §4.1).
# The properties are read transitively: spdlog's bring its fmt's (FMT_SHARED).
add_library(soak_header_deps INTERFACE)
foreach(dep spdlog::spdlog PkgConfig::UV)
  if(TARGET ${dep})
    target_compile_definitions(soak_header_deps INTERFACE $<TARGET_PROPERTY:${dep},INTERFACE_COMPILE_DEFINITIONS>)
    target_include_directories(soak_header_deps SYSTEM INTERFACE
      $<TARGET_PROPERTY:${dep},INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_options(soak_header_deps INTERFACE $<TARGET_PROPERTY:${dep},INTERFACE_COMPILE_OPTIONS>)
  endif()
endforeach()
