# Tests of the schedules area (soak_add_test(...) lines).
soak_add_test(unit_stats SOURCES unit/stats_test.cc LIBS soak_schedules LABELS unit)
