# Tests of the schedules area (soak_add_test(...) lines): plans and the pure
# campaign track.
soak_test_binary(schedules_tests)
soak_add_test(unit_plan SOURCES unit/plan_test.cc LIBS soak_schedules LABELS unit)
soak_add_test(unit_campaign_track SOURCES unit/campaign_track_test.cc LIBS soak_schedules LABELS unit)
soak_add_test(unit_heavy_turns SOURCES unit/heavy_turns_test.cc LIBS soak_schedules LABELS unit)
