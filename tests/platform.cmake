# Tests of the platform area (soak_add_test(...) lines).
