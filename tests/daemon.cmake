# Tests of the daemon area (soak_add_test(...) lines).
