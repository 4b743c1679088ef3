# Scheduler sources of soak_schedules: stage plans, next-due, campaign state machine.
target_sources(soak_schedules PRIVATE
  ${PROJECT_SOURCE_DIR}/schedules/plan.cc
)
