# Tests of the schedules area (soak_add_test(...) lines).
