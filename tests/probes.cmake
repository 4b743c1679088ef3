# Tests of the probes area (soak_add_test(...) lines).
soak_add_test(unit_probes_chat SOURCES unit/probes_chat_test.cc LIBS soak_probes LABELS unit)
soak_add_test(unit_probes_prometheus SOURCES unit/probes_prometheus_test.cc LIBS soak_probes LABELS unit)
soak_add_test(unit_probes_validators SOURCES unit/probes_validators_test.cc LIBS soak_probes LABELS unit)
soak_add_test(unit_probes_adapters SOURCES unit/probes_adapters_test.cc LIBS soak_probes LABELS unit)
soak_add_test(unit_probes_fixtures SOURCES unit/probes_fixtures_test.cc LIBS soak_probes LABELS unit)
soak_add_test(unit_probes_requests SOURCES unit/probes_requests_test.cc LIBS soak_probes LABELS unit)
soak_add_test(unit_probes_session SOURCES unit/probes_session_test.cc LIBS soak_probes LABELS unit)
soak_add_test(unit_probes_prefill_cap SOURCES unit/probes_prefill_cap_test.cc LIBS soak_probes LABELS unit)
