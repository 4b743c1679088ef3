# Precompiled headers. nlohmann/json (25k lines), spdlog with fmt, Catch2 and the
# standard library headers every file includes cost seconds of parsing per
# file, the same work for each of some two hundred files. They are compiled once
# per set of compiler flags and reused by every target with those flags
# (REUSE_FROM): soak_pch for the product code and test support (the build type's
# optimization), soak_test_pch for the test files (-O0, with Catch2;
# tests/CMakeLists.txt). One header cannot serve both: GCC ignores a
# precompiled header built at another -O level, and Clang refuses it.
#
# Only speed changes: each file still includes what it uses, which
# `scripts/macos-compile-check.sh --each` proves by compiling every file on its
# own without one. -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON builds without them.
set(SOAKD_PCH_HEADERS
  <nlohmann/json.hpp>
  <spdlog/spdlog.h>
  <algorithm>
  <chrono>
  <cmath>
  <cstdint>
  <cstdio>
  <filesystem>
  <fstream>
  <functional>
  <map>
  <memory>
  <optional>
  <set>
  <sstream>
  <string>
  <string_view>
  <utility>
  <vector>
)

# The product code's: compiled with what every product library has (what
# soak_core links: nlohmann_json, and spdlog's and libuv's compile flags through
# soak_header_deps, not the libraries), none of them built first.
add_library(soak_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/pch.cc)
target_link_libraries(soak_pch PRIVATE nlohmann_json::nlohmann_json soak_header_deps)
target_precompile_headers(soak_pch PRIVATE ${SOAKD_PCH_HEADERS})

# soak_reuse_pch(DIR [PCH]): every library and program under DIR (its subfolders too)
# that has sources and no precompiled header of its own reuses soak_pch (or PCH); called
# once all targets exist, so a new library needs no line of its own. Test files
# set theirs in soak_add_test. A target compiled without spdlog's definitions
# (one that links none of soak_core's libraries) opts out with
# DISABLE_PRECOMPILE_HEADERS; GCC says so otherwise (-Winvalid-pch: "not used
# because SPDLOG_FMT_EXTERNAL not defined").
function(soak_reuse_pch dir)
  set(pch soak_pch)
  if(ARGC GREATER 1)
    set(pch ${ARGV1})
  endif()
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    get_target_property(sources ${t} SOURCES)
    get_target_property(own ${t} PRECOMPILE_HEADERS)
    get_target_property(reused ${t} PRECOMPILE_HEADERS_REUSE_FROM)
    get_target_property(disabled ${t} DISABLE_PRECOMPILE_HEADERS)
    if(sources AND NOT own AND NOT reused AND NOT disabled)
      target_precompile_headers(${t} REUSE_FROM ${pch})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    soak_reuse_pch(${sub} ${pch})
  endforeach()
endfunction()
