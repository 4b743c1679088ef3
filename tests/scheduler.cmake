soak_add_test(unit_plan SOURCES unit/plan_test.cc LIBS soak_schedules LABELS unit)
add_library(soak_test_sim STATIC support/sim_runner.cc)
target_link_libraries(soak_test_sim PUBLIC soak_daemon)
soak_add_test(unit_campaign_sim SOURCES unit/campaign_sim_test.cc LIBS soak_test_sim soak_daemon LABELS unit)
