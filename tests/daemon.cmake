# Tests of the daemon area: campaigns (simulated in virtual time), CLIs, sampler
# service, daemon lifecycle, launchd files.
add_library(soak_test_sim STATIC support/sim_runner.cc)
target_link_libraries(soak_test_sim PUBLIC soak_daemon)
soak_add_test(unit_campaign_sim SOURCES unit/campaign_sim_test.cc LIBS soak_test_sim soak_daemon LABELS unit)
soak_add_test(unit_outbox SOURCES unit/outbox_test.cc LIBS soak_test_sim soak_test_store soak_daemon LABELS unit)
soak_add_test(unit_campaign_track SOURCES unit/campaign_track_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(unit_soakctl SOURCES unit/soakctl_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(unit_store_compat SOURCES unit/store_compat_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(unit_sampler_service SOURCES unit/sampler_service_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(integration_daemon_lifecycle SOURCES integration/daemon_lifecycle_test.cc
  LIBS soak_daemon soak_test_process LABELS integration)
add_dependencies(integration_daemon_lifecycle soakd)
soak_add_test(unit_launchd_plist SOURCES unit/launchd_plist_test.cc LIBS soak_daemon soak_test_process LABELS unit)

# Benchmark (prints figures; not a test): a week of a 10-candidate host, soakctl status/explain timings.
add_executable(store_bench bench/store_bench.cc)
target_include_directories(store_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(store_bench PRIVATE soak_test_sim soak_daemon)

soak_add_test(integration_daemon_e2e SOURCES integration/daemon_e2e_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 300)
target_compile_definitions(integration_daemon_e2e PRIVATE SOAK_FAKE_RUNTIME_BIN="$<TARGET_FILE:soak-fake-runtime>")
add_dependencies(integration_daemon_e2e soakd soak-fake-runtime)
