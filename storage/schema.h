// Schema migrations, applied in order. migrations()[i] takes a store from
// user_version i to i+1. Never edit a released migration: append a new one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace soak {

// PRAGMA application_id of a soakd store ("soak" in ASCII). A database without
// it (and with any table in it) is not ours and is never touched.
inline constexpr int32_t kSoakdApplicationId = 0x736f616b;

// The schema that added each later table (the position of its step in
// migrations(), kept beside it): an older store opened read-only has none,
// and reading it reads as empty.
inline constexpr int kLaunchesSchema = 2;      // runtime_launches (managed runtimes)
inline constexpr int kContextReachSchema = 3;  // context_reach
inline constexpr int kFingerprintSchema = 4;   // candidates.fingerprint, probe_results.server_load_ms
inline constexpr int kQueueSchema = 5;         // probe_results.server_running, server_waiting
inline constexpr int kThermalSchema = 6;       // host_samples.thermal_level
inline constexpr int kGoldenSchema = 7;        // golden_answers
inline constexpr int kKindIndexSchema = 8;     // probe_results_by_candidate_kind (an index: nothing to shadow)
inline constexpr int kSamplingMarkSchema = 9;  // probe_results.sampling "=" for the common sampling (storage/columns.h)
inline constexpr int kStageEvidenceSchema = 10;  // stage_evidence
inline constexpr int kQueueWaitSchema = 11;      // probe_results.queue_wait_us

// For an older store opened read-only (never migrated): TEMP views that shadow
// the tables whose columns it lacks (SQLite looks in TEMP first), so every
// query reads those columns as their defaults. Empty when nothing is missing.
std::string read_compat_sql(int user_version);

const std::vector<std::string_view>& migrations();
inline int schema_version() { return static_cast<int>(migrations().size()); }

}  // namespace soak
