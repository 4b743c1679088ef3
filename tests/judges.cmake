# Tests of the judges (soak_add_test(...) lines).
soak_test_binary(judges_tests)
soak_add_test(unit_stats SOURCES unit/stats_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_compare SOURCES unit/judge_compare_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_thermal SOURCES unit/judge_thermal_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_hard SOURCES unit/judge_hard_test.cc LIBS soak_judges LABELS unit)
# Answer hygiene: leaked markup over a stage (judges/hard.cc).
soak_add_test(unit_judge_hygiene SOURCES unit/judge_hygiene_test.cc LIBS soak_judges LABELS unit)
# Outstanding work is evidence: the unserved hard failure (judges/liveness.cc).
soak_add_test(unit_judge_liveness SOURCES unit/judge_liveness_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_session SOURCES unit/judge_session_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_canary SOURCES unit/judge_canary_test.cc LIBS soak_judges LABELS unit)
# The slo floors and the launch's output cap (docs/DESIGN.md §3.11).
soak_add_test(unit_judge_floors SOURCES unit/judge_floors_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_launch_cap SOURCES unit/judge_launch_cap_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_heavy_work SOURCES unit/judge_heavy_work_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_overlap SOURCES unit/judge_overlap_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_stages SOURCES unit/judge_stages_test.cc LIBS soak_judges LABELS unit)
# The golden-set comparison across builds (docs/DESIGN.md §3.13).
soak_add_test(unit_judge_equivalence SOURCES unit/judge_equivalence_test.cc LIBS soak_judges LABELS unit)
# These serialize evidence with the store's metrics_to_json (storage/evidence_json.h) to check determinism.
soak_add_test(unit_judge_soak SOURCES unit/judge_soak_test.cc LIBS soak_judges soak_storage LABELS unit)
soak_add_test(unit_judge_verdict SOURCES unit/judge_verdict_test.cc LIBS soak_judges soak_storage LABELS unit)

# Benchmark program (prints figures; not a test).
soak_add_bench(judge_bench SOURCES bench/judge_bench.cc LIBS soak_judges)
# The sequential failure test in virtual time: false rejects at the budget, attempts to reject.
soak_add_bench(sequential_bench SOURCES bench/sequential_bench.cc LIBS soak_judges)
soak_add_test(unit_judge_answers SOURCES unit/judge_answers_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_sequential SOURCES unit/judge_sequential_test.cc LIBS soak_judges LABELS unit)
soak_add_test(unit_judge_golden SOURCES unit/judge_golden_test.cc LIBS soak_judges LABELS unit)
# A promotion names its evidence: decisive rules, pooled drift and comparisons, the candidate against itself.
soak_add_test(unit_judge_evidence SOURCES unit/judge_evidence_test.cc LIBS soak_judges LABELS unit)
