# Tests of the daemon area: CLIs, daemon lifecycle, launchd files.
soak_add_test(unit_soakctl SOURCES unit/soakctl_test.cc LIBS soak_daemon LABELS unit)
soak_add_test(integration_daemon_lifecycle SOURCES integration/daemon_lifecycle_test.cc
  LIBS soak_daemon soak_test_process LABELS integration)
add_dependencies(integration_daemon_lifecycle soakd)
soak_add_test(unit_launchd_plist SOURCES unit/launchd_plist_test.cc LIBS soak_daemon soak_test_process LABELS unit)
