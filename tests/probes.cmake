# Tests of the probes area (soak_add_test(...) lines).
