# Tests of the daemon area: campaigns (simulated in virtual time), CLIs, sampler
# service, daemon lifecycle, launchd files.
soak_test_binary(daemon_tests)
add_library(soak_test_sim STATIC support/sim_runner.cc)
target_link_libraries(soak_test_sim PUBLIC soak_daemon)
# Weeks of campaigns in virtual time, agent sessions turn by turn: tens of
# seconds of CPU in a Debug build, more on a loaded host.
soak_add_test(unit_campaign_sim SOURCES unit/campaign_sim_test.cc LIBS soak_soakctl soak_test_sim soak_daemon LABELS unit
  TIMEOUT 300)
# The lifecycle's invariants over random crashes and controls in virtual time.
soak_add_test(unit_campaign_lifecycle_property SOURCES unit/campaign_lifecycle_property_test.cc
  LIBS soak_soakctl soak_test_sim soak_daemon LABELS unit TIMEOUT 600)
# A promotion rests on evidence: a late soak slowdown, a soak too thin to decide.
soak_add_test(unit_campaign_evidence_sim SOURCES unit/campaign_evidence_sim_test.cc LIBS soak_test_sim soak_daemon
  LABELS unit TIMEOUT 300)
soak_add_test(unit_campaign_faults_sim SOURCES unit/campaign_faults_sim_test.cc LIBS soak_soakctl soak_test_sim
  soak_daemon LABELS unit TIMEOUT 300)
soak_add_test(unit_campaign_builds_sim SOURCES unit/campaign_builds_sim_test.cc LIBS soak_soakctl soak_test_sim
  soak_daemon LABELS unit TIMEOUT 300)
soak_add_test(unit_campaign_heavy SOURCES unit/campaign_heavy_test.cc LIBS soak_test_sim soak_daemon LABELS unit
  TIMEOUT 300)
soak_add_test(unit_campaign_stages SOURCES unit/campaign_stages_test.cc LIBS soak_soakctl soak_test_sim soak_daemon LABELS unit
  TIMEOUT 300)
soak_add_test(unit_campaign_session SOURCES unit/campaign_session_test.cc LIBS soak_soakctl soak_test_sim soak_daemon LABELS unit
  TIMEOUT 300)
soak_add_test(unit_campaign_launch_cap SOURCES unit/campaign_launch_cap_test.cc
  LIBS soak_soakctl soak_test_sim soak_daemon LABELS unit TIMEOUT 300)
# Liveness: a stage's outstanding requests with nothing served (campaigns/liveness.h).
soak_add_test(unit_campaign_liveness SOURCES unit/campaign_liveness_test.cc
  LIBS soak_soakctl soak_test_sim soak_daemon LABELS unit TIMEOUT 300)
# The baseline rows a stage is compared with (campaigns/recipe_store.h choose_baseline).
soak_add_test(unit_baseline_choice SOURCES unit/baseline_choice_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(unit_outbox SOURCES unit/outbox_test.cc LIBS soak_test_sim soak_test_store soak_daemon LABELS unit)
soak_add_test(unit_soakctl SOURCES unit/soakctl_test.cc LIBS soak_soakctl soak_daemon soak_test_store LABELS unit)
soak_add_test(unit_store_compat SOURCES unit/store_compat_test.cc LIBS soak_soakctl soak_daemon LABELS unit)
soak_add_test(unit_sampler_service SOURCES unit/sampler_service_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(integration_daemon_lifecycle SOURCES integration/daemon_lifecycle_test.cc
  LIBS soak_soakctl soak_daemon soak_test_process LABELS integration)
soak_test_needs(integration_daemon_lifecycle soakd)
# The store's disk filled and freed under a running soakd (a tmpfs in a private
# mount namespace; skipped where one cannot be made).
soak_add_test(integration_store_disk_full SOURCES integration/store_disk_full_test.cc
  LIBS soak_daemon soak_test_process soak_fake_runtime LABELS integration)
soak_test_needs(integration_store_disk_full soakd)
set_tests_properties(integration_store_disk_full PROPERTIES SKIP_RETURN_CODE 77)
# The notify command run for real (a shell script that records what it got).
soak_add_test(integration_notify_command SOURCES integration/notify_command_test.cc LIBS soak_daemon
  LABELS integration)
soak_add_test(unit_launchd_plist SOURCES unit/launchd_plist_test.cc LIBS soak_daemon soak_test_process LABELS unit)

# Benchmark (prints figures; not a test): a week of a 10-candidate host, soakctl status/explain timings.
soak_add_bench(store_bench SOURCES bench/store_bench.cc LIBS soak_soakctl soak_test_sim soak_daemon DEPENDS soakctl)

# Benchmark (prints figures; not a test): soakd at rest with 4 and 24 candidates
# against fake runtimes: resident memory, wakeups and CPU between due work.
soak_add_bench(rest_bench SOURCES bench/rest_bench.cc LIBS SQLite::SQLite3 DEPENDS soakd soak-fake-runtime)
set_target_properties(rest_bench PROPERTIES DISABLE_PRECOMPILE_HEADERS ON)  # links no spdlog: not soak_pch's flags
# Benchmark: the floor under rest_bench's resident figure, the libraries soakd
# links brought up the same way in a program with none of soakd's code.
soak_add_bench(library_floor_bench SOURCES bench/library_floor_bench.cc
  LIBS CURL::libcurl PkgConfig::UV SQLite::SQLite3 spdlog::spdlog nlohmann_json::nlohmann_json)

soak_add_test(integration_daemon_e2e SOURCES integration/daemon_e2e_test.cc
  LIBS soak_soakctl soak_daemon soak_test_process LABELS integration TIMEOUT 300)
soak_test_needs(integration_daemon_e2e soakd soak-fake-runtime)
# The sequential failure test through the daemon: early rejection, healthy stages run out.
soak_add_test(integration_daemon_early_verdict SOURCES integration/daemon_early_verdict_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 300)
soak_test_needs(integration_daemon_early_verdict soakd soak-fake-runtime)

# Managed candidates (docs/DESIGN.md §4.8): the launch block, the executable's
# fingerprint, orphan matching and the runtime log (no process started).
soak_add_test(unit_launch_config SOURCES unit/launch_config_test.cc LIBS soak_core soak_probes LABELS unit)
soak_add_test(unit_runtime_identity SOURCES unit/runtime_identity_test.cc LIBS soak_daemon LABELS unit)

# Managed candidates with the fake runtime as soakd's child, on loopback.
soak_add_test(integration_managed_runtime SOURCES integration/managed_runtime_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 400)
soak_test_needs(integration_managed_runtime soakd soakctl soak-fake-runtime)
# It counts the runtimes left running through /proc: Linux only (the same code
# paths run on macOS in integration_managed_runtime).
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  soak_add_test(integration_managed_restart SOURCES integration/managed_restart_test.cc
    LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 400)
  soak_test_needs(integration_managed_restart soakd soakctl soak-fake-runtime)
endif()

# The slo floors and the launch cap through the fake runtime, soakd as a whole (docs/DESIGN.md §3.11).
soak_add_test(integration_managed_floors SOURCES integration/managed_floors_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 400)
soak_test_needs(integration_managed_floors soakd soak-fake-runtime)

# Verdicts that hold over the whole run through the fake runtime, soakd as a
# whole (tests/integration/verdicts_harness.h): comparisons in every stage
# (the gate's long-context rounds, a history baseline's own spread), the
# soak's rules (131K rounds, a cache that fills), fair heavy work for 20
# canaries at once.
soak_add_test(integration_verdicts_compare_fake SOURCES integration/verdicts_compare_fake_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 400)
soak_test_needs(integration_verdicts_compare_fake soakd soak-fake-runtime)
soak_add_test(integration_verdicts_soak_fake SOURCES integration/verdicts_soak_fake_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 400)
soak_test_needs(integration_verdicts_soak_fake soakd soak-fake-runtime)
# Answer hygiene: a build that starts leaking <|im_end|> at its canary is rejected there.
soak_add_test(integration_verdicts_hygiene_fake SOURCES integration/verdicts_hygiene_fake_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 200)
soak_test_needs(integration_verdicts_hygiene_fake soakd soak-fake-runtime)
# Queued is not hung; outstanding work is evidence (docs/DESIGN.md §2.2, §3.4).
soak_add_test(integration_verdicts_queue_fake SOURCES integration/verdicts_queue_fake_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 400)
soak_test_needs(integration_verdicts_queue_fake soakd soak-fake-runtime)
soak_add_test(integration_heavy_fair_fake SOURCES integration/heavy_fair_fake_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 400)
soak_test_needs(integration_heavy_fair_fake soakd soak-fake-runtime)
# ab "interleaved" (docs/DESIGN.md §4.8): the previous build's program beside the canary, and its fallback.
soak_add_test(integration_managed_ab SOURCES integration/managed_ab_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 400)
soak_test_needs(integration_managed_ab soakd soak-fake-runtime)

# A real llama-server as a managed candidate when SOAKD_LLAMA_SERVER names one; skipped (exit 77) otherwise.
soak_add_test(integration_managed_llama_server SOURCES integration/managed_llama_server_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 300)
set_tests_properties(integration_managed_llama_server PROPERTIES SKIP_RETURN_CODE 77)
soak_test_needs(integration_managed_llama_server soakd soakctl)
# The same real llama-server started with -n 64: held at smoke from its launch fingerprint alone.
soak_add_test(integration_managed_llama_server_cap SOURCES integration/managed_llama_server_cap_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 300)
set_tests_properties(integration_managed_llama_server_cap PROPERTIES SKIP_RETURN_CODE 77)
soak_test_needs(integration_managed_llama_server_cap soakd)
soak_add_test(unit_campaign_managed SOURCES unit/campaign_managed_test.cc LIBS soak_test_sim soak_daemon LABELS unit)
# The golden set through the daemon: a promoted baseline, then each answer flavour of the fake as the next build.
soak_add_test(integration_equivalence_campaign SOURCES integration/equivalence_campaign_test.cc
  LIBS soak_daemon soak_test_process LABELS integration TIMEOUT 300)
soak_test_needs(integration_equivalence_campaign soakd soakctl soak-fake-runtime)
