# Tests of the transport area (soak_add_test(...) lines).
soak_test_binary(transport_tests)

# Splits raw `.http` captures into status line, headers and body; shared by every area's tests.
add_library(soak_test_support STATIC support/http_capture.cc)
target_include_directories(soak_test_support PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(soak_test_support PUBLIC soak_core soak_transport)

soak_add_test(unit_sse_parser SOURCES unit/sse_parser_test.cc LIBS soak_transport LABELS unit)
soak_add_test(unit_sse_captures SOURCES unit/sse_captures_test.cc LIBS soak_transport soak_test_support LABELS unit)
soak_add_test(unit_transport_deadline SOURCES unit/transport_deadline_test.cc LIBS soak_transport LABELS unit)
soak_add_test(unit_transport_end_reason SOURCES unit/transport_end_reason_test.cc LIBS soak_transport LABELS unit)
soak_add_test(unit_transport_queue SOURCES unit/transport_queue_test.cc LIBS soak_transport LABELS unit)
soak_add_test(unit_transport_http_capture SOURCES unit/transport_http_capture_test.cc LIBS soak_test_support LABELS unit)

# Real sockets on 127.0.0.1 against a scripted server; every scenario bounded to a few seconds.
soak_add_test(integration_http_client
  SOURCES integration/http_client_loopback_test.cc
  LIBS soak_transport soak_test_support Threads::Threads
  LABELS integration)
