soak_add_test(unit_plan SOURCES unit/plan_test.cc LIBS soak_schedules LABELS unit)
