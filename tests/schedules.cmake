# Tests of the schedules area (soak_add_test(...) lines).
soak_add_test(unit_stats SOURCES unit/stats_test.cc LIBS soak_schedules LABELS unit)
soak_add_test(unit_judge_compare SOURCES unit/judge_compare_test.cc LIBS soak_schedules LABELS unit)
soak_add_test(unit_judge_hard SOURCES unit/judge_hard_test.cc LIBS soak_schedules LABELS unit)
soak_add_test(unit_judge_soak SOURCES unit/judge_soak_test.cc LIBS soak_schedules LABELS unit)
# The verdict test serializes evidence with the store's metrics_to_json.
soak_add_test(unit_judge_verdict SOURCES unit/judge_verdict_test.cc LIBS soak_schedules soak_storage LABELS unit)
