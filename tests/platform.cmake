# Tests of the platform area: sampler parsers and logic (unit, virtual time),
# the real Linux sampler (integration), and the sampler benchmark.
soak_test_binary(platform_tests)
soak_add_test(unit_platform_procfs SOURCES unit/platform_procfs_test.cc LIBS soak_platform LABELS unit)
soak_add_test(unit_platform_darwin SOURCES unit/platform_darwin_test.cc LIBS soak_platform LABELS unit)
# Tests that make a Sampler hand it the real runtime table (daemon/wiring.h): they link soak_daemon.
soak_add_test(unit_platform_runtime_processes SOURCES unit/platform_runtime_processes_test.cc LIBS soak_platform soak_daemon
  LABELS unit)

if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  # Skipped (exit 77) where the allocator is not glibc's: under AddressSanitizer.
  soak_add_test(unit_platform_allocator SOURCES unit/platform_allocator_test.cc LIBS soak_platform LABELS unit)
  set_tests_properties(unit_platform_allocator PROPERTIES SKIP_RETURN_CODE 77)
  soak_add_test(unit_platform_linux_sampler SOURCES unit/platform_sampler_linux_test.cc
                LIBS soak_platform soak_daemon LABELS unit)
  # The thermal levels: notify's values, the zone trees in tests/fixtures/thermal/, the Linux sampler.
  soak_add_test(unit_platform_thermal SOURCES unit/platform_thermal_test.cc LIBS soak_platform soak_daemon
                LABELS unit)
  # It samples its own process and checks the name the kernel gives it (comm:
  # the executable's name cut to 15 characters, "integration_sam").
  soak_add_test(integration_sampler_linux SOURCES integration/sampler_linux_test.cc
                LIBS soak_detectors soak_daemon LABELS integration BINARY integration_sampler)
  soak_add_test(integration_sampler_store SOURCES integration/sampler_store_linux_test.cc
                LIBS soak_platform soak_storage soak_daemon LABELS integration)
endif()

soak_add_bench(sampler_bench SOURCES bench/sampler_bench.cc LIBS soak_platform soak_daemon)
