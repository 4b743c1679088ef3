# Tests of the detectors area: memory guard, gaps, restarts, duplicate engines (virtual time).
soak_test_binary(detectors_tests)
soak_add_test(unit_detectors SOURCES unit/detectors_test.cc LIBS soak_detectors soak_daemon LABELS unit)
