# Tests of the transport area (soak_add_test(...) lines).
