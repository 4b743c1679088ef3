# Tests of the reports area: the HTML and SVG writers on literal inputs, the
# report model and metrics from a demo-like store, the pages in a real browser,
# the fleet recipe with promtool, and the Homebrew formula.
soak_test_binary(reports_tests)
add_library(soak_test_demo STATIC support/demo_store.cc)
target_link_libraries(soak_test_demo PUBLIC soak_test_sim soak_daemon)

soak_add_test(unit_reports SOURCES unit/reports_test.cc LIBS soak_reports LABELS unit)
soak_add_test(unit_reports_store SOURCES unit/reports_store_test.cc LIBS soak_soakctl soak_test_demo soak_daemon LABELS unit)

# Headless Chromium renders the reports; skipped (exit 77) without Chromium.
soak_add_test(integration_report_browser SOURCES integration/report_browser_test.cc
  LIBS soak_soakctl soak_test_demo soak_daemon soak_test_process LABELS integration TIMEOUT 300)
set_tests_properties(integration_report_browser PROPERTIES SKIP_RETURN_CODE 77)

# examples/fleet/ with the real promtool; skipped (exit 77) without promtool.
soak_add_test(integration_fleet_promtool SOURCES integration/fleet_promtool_test.cc
  LIBS soak_soakctl soak_test_demo soak_daemon soak_test_process LABELS integration TIMEOUT 300)
set_tests_properties(integration_fleet_promtool PROPERTIES SKIP_RETURN_CODE 77)

# examples/fleet/ run for real: Debian's prometheus scraping two node exporters'
# textfile collectors, each fed by a soakd store of its own, on loopback ports
# picked free; skipped (exit 77) without prometheus or prometheus-node-exporter.
soak_add_test(integration_fleet_prometheus SOURCES integration/fleet_prometheus_test.cc
  LIBS soak_soakctl soak_test_demo soak_daemon soak_test_process CURL::libcurl LABELS integration TIMEOUT 300)
set_tests_properties(integration_fleet_prometheus PROPERTIES SKIP_RETURN_CODE 77)

# Formula/soakd.rb: Ruby syntax, and its service block against launchd/'s plist;
# skipped (exit 77) without ruby.
add_test(NAME homebrew_formula COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/homebrew/check.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(homebrew_formula PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)

# Benchmark (prints figures; not a test): report time and size for a week-long 10-candidate store.
soak_add_bench(reports_bench SOURCES bench/reports_bench.cc LIBS soak_soakctl soak_daemon)
