# Tests of the probe engine (probes/engine*, probes/probe_*, daemon/probe_task_runner, soakd probe).
soak_test_binary(probe_engine_tests)
soak_add_test(unit_engine_rows SOURCES unit/engine_rows_test.cc LIBS soak_probes LABELS unit)
soak_add_test(unit_engine_cli SOURCES unit/engine_cli_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(unit_probe_cli_kinds SOURCES unit/probe_cli_kinds_test.cc LIBS soak_daemon LABELS unit)

# The engine against the in-process fake runtime on 127.0.0.1.
soak_add_test(integration_probe_faults SOURCES integration/probe_faults_test.cc
  LIBS soak_probes soak_fake_runtime LABELS integration)
# Queued bursts (not hangs) and connections reset before a status line.
soak_add_test(integration_probe_queue SOURCES integration/probe_queue_test.cc
  LIBS soak_probes soak_fake_runtime Threads::Threads LABELS integration)
soak_add_test(integration_probe_wire SOURCES integration/probe_wire_test.cc
  LIBS soak_probes soak_fake_runtime Threads::Threads LABELS integration)
# Slow prefills (progress reports, the floor-rate allowance, plain pings) and server caps, judged at smoke.
soak_add_test(integration_probe_prefill SOURCES integration/probe_prefill_test.cc
  LIBS soak_probes soak_schedules soak_fake_runtime LABELS integration)
soak_add_test(integration_probe_captures SOURCES integration/probe_captures_test.cc
  LIBS soak_probes soak_test_support Threads::Threads LABELS integration)
soak_add_test(integration_probe_runner SOURCES integration/probe_runner_test.cc
  LIBS soak_daemon soak_fake_runtime LABELS integration)

# soakd probe and the fake runtime as child processes.
soak_add_test(integration_probe_cli SOURCES integration/probe_cli_test.cc
  LIBS soak_storage soak_test_process nlohmann_json::nlohmann_json LABELS integration)
soak_test_needs(integration_probe_cli soakd soak-fake-runtime)

# soakd init: recognition and the config text (unit); against every flavour of
# the fake runtime on --ports, then check-config and probe on what it wrote.
soak_add_test(unit_init_config SOURCES unit/init_config_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(integration_init_cli SOURCES integration/init_cli_test.cc
  LIBS soak_test_process LABELS integration TIMEOUT 300)
soak_test_needs(integration_init_cli soakd soak-fake-runtime)

# The golden set through the fake's answer modes: soakd probe --kind equivalence, then soakctl equivalence.
soak_add_test(integration_equivalence_fake SOURCES integration/equivalence_fake_test.cc
  LIBS soak_probes soak_storage soak_test_process LABELS integration TIMEOUT 600)
soak_test_needs(integration_equivalence_fake soakd soakctl soak-fake-runtime)

# A real llama-server when SOAKD_LLAMA_SERVER names one; skipped (exit 77) otherwise.
soak_add_test(integration_probe_llama_server SOURCES integration/probe_llama_server_test.cc
  LIBS soak_daemon soak_test_process Threads::Threads LABELS integration TIMEOUT 1500)
set_tests_properties(integration_probe_llama_server PROPERTIES SKIP_RETURN_CODE 77)

# Agent sessions and pooling candidates through the fake runtime, judged.
soak_add_test(integration_probe_session_fake SOURCES integration/probe_session_fake_test.cc
  LIBS soak_probes soak_schedules soak_fake_runtime LABELS integration)

# Probe rows from the fake runtime judged by the canary's rules.
soak_add_test(integration_verdict_fake SOURCES integration/verdict_fake_test.cc
  LIBS soak_probes soak_schedules soak_fake_runtime LABELS integration)
# Identity, health states and the launch fingerprint per runtime through the fake's flavours.
soak_add_test(integration_probe_identity SOURCES integration/probe_identity_test.cc
  LIBS soak_probes soak_fake_runtime LABELS integration)
# An eighth runtime from nothing but its entry and a table line, through the engine's options.
soak_add_test(integration_probe_new_runtime SOURCES integration/probe_new_runtime_test.cc
  LIBS soak_daemon soak_fake_runtime LABELS integration)
# Answers judged for what they say (empty, reasoning only, code word, early stop, loops) through the fake.
soak_add_test(integration_answers_fake SOURCES integration/answers_fake_test.cc
  LIBS soak_probes soak_schedules soak_fake_runtime LABELS integration)

# The golden set against a real llama-server when SOAKD_LLAMA_SERVER names one; skipped (exit 77) otherwise.
soak_add_test(integration_equivalence_llama_server SOURCES integration/equivalence_llama_server_test.cc
  LIBS soak_judges soak_storage soak_test_process LABELS integration TIMEOUT 1500)
set_tests_properties(integration_equivalence_llama_server PROPERTIES SKIP_RETURN_CODE 77)
soak_test_needs(integration_equivalence_llama_server soakd soakctl)
