# Tests of the storage area: the SQLite store, and the fault-injecting Store
# wrapper that other areas' tests use to make the store fail on demand.
soak_test_binary(storage_tests)
soak_add_test(unit_store SOURCES unit/store_test.cc LIBS soak_storage LABELS unit)
soak_add_test(unit_store_golden SOURCES unit/store_golden_test.cc LIBS soak_storage LABELS unit)
soak_add_test(unit_store_errors SOURCES unit/store_errors_test.cc LIBS soak_storage LABELS unit)

# FaultyStore (tests/support/faulty_store.h): wraps any Store, fails chosen calls.
add_library(soak_test_store STATIC support/faulty_store.cc)
target_include_directories(soak_test_store PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(soak_test_store PUBLIC soak_storage)
soak_add_test(unit_faulty_store SOURCES unit/faulty_store_test.cc LIBS soak_test_store soak_storage LABELS unit)
