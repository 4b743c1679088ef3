#include "storage/schema.h"

namespace soak {

namespace {

constexpr std::string_view kV1 = R"SQL(
CREATE TABLE hosts (
  id            INTEGER PRIMARY KEY,
  hostname      TEXT NOT NULL,
  hw_model      TEXT NOT NULL,
  mem_bytes     INTEGER NOT NULL,
  os_version    TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms  INTEGER NOT NULL,
  UNIQUE (hostname, hw_model, mem_bytes, os_version)
);

CREATE TABLE candidates (
  id            INTEGER PRIMARY KEY,
  host_id       INTEGER NOT NULL REFERENCES hosts(id),
  name          TEXT NOT NULL,
  model         TEXT NOT NULL,
  runtime       TEXT NOT NULL,
  build         TEXT NOT NULL,
  base_url      TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms  INTEGER NOT NULL,
  baseline_id   INTEGER REFERENCES candidates(id),
  UNIQUE (host_id, name, model, runtime, build)
);

CREATE TABLE stages (
  id           INTEGER PRIMARY KEY,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  kind         TEXT NOT NULL CHECK (kind IN ('smoke','canary','gate','soak')),
  state        TEXT NOT NULL,
  started_ms   INTEGER NOT NULL,
  length_ms    INTEGER NOT NULL,
  deadline_ms  INTEGER NOT NULL,
  ended_ms     INTEGER,
  reason       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX stages_by_candidate ON stages(candidate_id, id);

CREATE TABLE probe_results (
  id                   INTEGER PRIMARY KEY,
  candidate_id         INTEGER NOT NULL REFERENCES candidates(id),
  host_id              INTEGER NOT NULL REFERENCES hosts(id),
  stage_id             INTEGER REFERENCES stages(id),
  started_ms           INTEGER NOT NULL,
  kind                 TEXT NOT NULL,
  task                 TEXT NOT NULL DEFAULT '',
  workload_id          TEXT NOT NULL,
  fixture_hash         TEXT NOT NULL DEFAULT '',
  size_tokens          INTEGER,
  cache_state          TEXT NOT NULL DEFAULT 'none',
  sampling             TEXT NOT NULL DEFAULT '',
  thinking             INTEGER,
  client_concurrency   INTEGER NOT NULL DEFAULT 1,
  runtime_slots        INTEGER,
  group_id             INTEGER,
  outcome              TEXT NOT NULL,
  outcome_category     TEXT NOT NULL,
  http_status          INTEGER,
  detail               TEXT NOT NULL DEFAULT '',
  t_connect_us         INTEGER,
  t_first_byte_us      INTEGER,
  t_first_event_us     INTEGER,
  t_first_token_us     INTEGER,
  t_last_token_us      INTEGER,
  t_terminal_us        INTEGER,
  t_done_us            INTEGER,
  itl_p50_us           INTEGER,
  itl_p95_us           INTEGER,
  itl_max_us           INTEGER,
  client_decode_tps    REAL,
  timing_artifact      INTEGER NOT NULL DEFAULT 0,
  prompt_tokens        INTEGER,
  completion_tokens    INTEGER,
  reasoning_tokens     INTEGER,
  content_events       INTEGER NOT NULL DEFAULT 0,
  reasoning_events     INTEGER NOT NULL DEFAULT 0,
  server_prompt_n      INTEGER,
  server_cache_n       INTEGER,
  server_predicted_n   INTEGER,
  server_prompt_ms     REAL,
  server_prompt_tps    REAL,
  server_predicted_ms  REAL,
  server_predicted_tps REAL,
  server_ttft_ms       REAL,
  server_draft_n       INTEGER,
  server_draft_accepted INTEGER,
  finish_reason        TEXT NOT NULL DEFAULT '',
  response_model       TEXT NOT NULL DEFAULT '',
  bytes_received       INTEGER NOT NULL DEFAULT 0,
  body_hash            TEXT NOT NULL DEFAULT '',
  excerpt              TEXT NOT NULL DEFAULT '',
  extra                TEXT NOT NULL DEFAULT ''
);
CREATE INDEX probe_results_by_candidate ON probe_results(candidate_id, id);
CREATE INDEX probe_results_by_stage ON probe_results(stage_id, id);

CREATE TABLE host_samples (
  id                 INTEGER PRIMARY KEY,
  host_id            INTEGER NOT NULL REFERENCES hosts(id),
  ts_ms              INTEGER NOT NULL,
  free_bytes         INTEGER,
  active_bytes       INTEGER,
  inactive_bytes     INTEGER,
  wired_bytes        INTEGER,
  compressed_bytes   INTEGER,
  available_bytes    INTEGER,
  total_bytes        INTEGER,
  swap_used_bytes    INTEGER,
  swap_total_bytes   INTEGER,
  pageins            INTEGER,
  pageouts           INTEGER,
  swapins            INTEGER,
  swapouts           INTEGER,
  pressure_level     INTEGER,
  memorystatus_level INTEGER,
  psi_some_avg10     REAL,
  psi_full_avg10     REAL,
  psi_some_total_us  INTEGER,
  psi_full_total_us  INTEGER,
  error              TEXT NOT NULL DEFAULT ''
);
CREATE INDEX host_samples_by_time ON host_samples(host_id, ts_ms);

CREATE TABLE process_samples (
  id              INTEGER PRIMARY KEY,
  host_id         INTEGER NOT NULL REFERENCES hosts(id),
  candidate_id    INTEGER REFERENCES candidates(id),
  ts_ms           INTEGER NOT NULL,
  pid             INTEGER NOT NULL,
  name            TEXT NOT NULL DEFAULT '',
  start_time      INTEGER,
  footprint_bytes INTEGER,
  resident_bytes  INTEGER,
  swap_bytes      INTEGER,
  pss_bytes       INTEGER,
  error           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX process_samples_by_candidate ON process_samples(candidate_id, ts_ms);

CREATE TABLE events (
  id           INTEGER PRIMARY KEY,
  ts_ms        INTEGER NOT NULL,
  host_id      INTEGER REFERENCES hosts(id),
  candidate_id INTEGER REFERENCES candidates(id),
  kind         TEXT NOT NULL,
  detail       TEXT NOT NULL DEFAULT '{}',
  duration_ms  INTEGER
);
CREATE INDEX events_by_candidate ON events(candidate_id, ts_ms);
CREATE INDEX events_by_kind ON events(kind, ts_ms);

CREATE TABLE verdicts (
  id                INTEGER PRIMARY KEY,
  candidate_id      INTEGER NOT NULL REFERENCES candidates(id),
  stage_id          INTEGER REFERENCES stages(id),
  ts_ms             INTEGER NOT NULL,
  state             TEXT NOT NULL CHECK (state IN ('running','promoted','rejected','hold','inconclusive','blocked')),
  stage             TEXT NOT NULL DEFAULT '',
  reason            TEXT NOT NULL DEFAULT '',
  judge_version     TEXT NOT NULL,
  config_hash       TEXT NOT NULL,
  evidence_first_id INTEGER NOT NULL DEFAULT 0,
  evidence_last_id  INTEGER NOT NULL DEFAULT 0,
  baseline_id       INTEGER REFERENCES candidates(id),
  baseline_mode     TEXT NOT NULL DEFAULT 'none',
  metrics           TEXT NOT NULL DEFAULT '[]',
  judge_input       TEXT NOT NULL DEFAULT '{}',
  is_override       INTEGER NOT NULL DEFAULT 0,
  who               TEXT NOT NULL DEFAULT '',
  why               TEXT NOT NULL DEFAULT ''
);
CREATE INDEX verdicts_by_candidate ON verdicts(candidate_id, id);

CREATE TABLE control_requests (
  id           INTEGER PRIMARY KEY,
  ts_ms        INTEGER NOT NULL,
  candidate    TEXT NOT NULL,
  candidate_id INTEGER REFERENCES candidates(id),
  action       TEXT NOT NULL CHECK (action IN ('start','abort','promote')),
  is_override  INTEGER NOT NULL DEFAULT 0,
  who          TEXT NOT NULL DEFAULT '',
  why          TEXT NOT NULL DEFAULT '',
  handled_ms   INTEGER,
  result       TEXT NOT NULL DEFAULT ''
);

-- "What is the promotion verdict of model X on runtime Y at build Z?" in plain sqlite3:
--   SELECT * FROM promotion_status WHERE model = 'X' AND runtime = 'Y';
CREATE VIEW promotion_status AS
SELECT c.model, c.runtime, c.build, c.name AS candidate, h.hostname AS host,
       v.state AS verdict, v.stage, v.reason, v.ts_ms AS verdict_ms,
       datetime(v.ts_ms / 1000, 'unixepoch') AS verdict_at_utc,
       v.is_override, c.id AS candidate_id, v.id AS verdict_id
FROM candidates c
JOIN hosts h ON h.id = c.host_id
JOIN verdicts v ON v.id = (SELECT MAX(id) FROM verdicts WHERE candidate_id = c.id);
)SQL";

// v2: managed runtimes (docs/DESIGN.md §4.8): every start of a runtime soakd
// launched, with the process it became and how it ended.
constexpr std::string_view kV2 = R"SQL(
CREATE TABLE runtime_launches (
  id           INTEGER PRIMARY KEY,
  host_id      INTEGER NOT NULL REFERENCES hosts(id),
  name         TEXT NOT NULL,
  candidate_id INTEGER REFERENCES candidates(id),
  pid          INTEGER NOT NULL,
  start_time   INTEGER,
  executable   TEXT NOT NULL,
  exe_size     INTEGER NOT NULL,
  exe_mtime_ms INTEGER NOT NULL,
  exe_hash     TEXT NOT NULL,
  argv         TEXT NOT NULL,
  started_ms   INTEGER NOT NULL,
  ready_ms     INTEGER,
  state        TEXT NOT NULL CHECK (state IN ('running','left_running','exited','stopped','orphan_stopped','gone')),
  ended_ms     INTEGER,
  exit_status  INTEGER,
  term_signal  INTEGER,
  log_tail     TEXT NOT NULL DEFAULT '',
  detail       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runtime_launches_by_name ON runtime_launches(host_id, name, id);
CREATE INDEX runtime_launches_by_candidate ON runtime_launches(candidate_id, id);
)SQL";

// v3: how far each build's context reaches (docs/DESIGN.md §3.9), one row per
// judged canary; the latest row of a candidate is what status shows.
constexpr std::string_view kV3 = R"SQL(
CREATE TABLE context_reach (
  id                 INTEGER PRIMARY KEY,
  candidate_id       INTEGER NOT NULL REFERENCES candidates(id),
  stage_id           INTEGER REFERENCES stages(id),
  ts_ms              INTEGER NOT NULL,
  reach_tokens       INTEGER NOT NULL,
  configured_tokens  INTEGER NOT NULL,
  runtime_ctx_tokens INTEGER,
  runtime_ctx_source TEXT NOT NULL DEFAULT ''
);
CREATE INDEX context_reach_by_candidate ON context_reach(candidate_id, id);
)SQL";

// v4: the launch fingerprint (docs/DESIGN.md §7.2) is part of a candidate
// row's identity: what the runtime serves with (context, slots, KV cache type,
// speculative settings, model file or digest) changing is a new row, like a
// build change. SQLite cannot change a UNIQUE constraint in place, so the
// table is rebuilt with its ids kept; foreign keys are checked at COMMIT
// (defer_foreign_keys), when every referenced id exists again.
constexpr std::string_view kV4 = R"SQL(
PRAGMA defer_foreign_keys = ON;
DROP VIEW promotion_status;
CREATE TEMP TABLE candidates_v3 AS SELECT * FROM candidates;
DROP TABLE candidates;
CREATE TABLE candidates (
  id            INTEGER PRIMARY KEY,
  host_id       INTEGER NOT NULL REFERENCES hosts(id),
  name          TEXT NOT NULL,
  model         TEXT NOT NULL,
  runtime       TEXT NOT NULL,
  build         TEXT NOT NULL,
  base_url      TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms  INTEGER NOT NULL,
  baseline_id   INTEGER REFERENCES candidates(id),
  fingerprint   TEXT NOT NULL DEFAULT '',
  UNIQUE (host_id, name, model, runtime, build, fingerprint)
);
INSERT INTO candidates (id, host_id, name, model, runtime, build, base_url, first_seen_ms, last_seen_ms, baseline_id)
  SELECT id, host_id, name, model, runtime, build, base_url, first_seen_ms, last_seen_ms, baseline_id FROM candidates_v3;
DROP TABLE candidates_v3;
-- oMLX usage.model_load_duration: a cold load inside the request, apart from TTFT.
ALTER TABLE probe_results ADD COLUMN server_load_ms REAL;
CREATE VIEW promotion_status AS
SELECT c.model, c.runtime, c.build, c.name AS candidate, h.hostname AS host,
       v.state AS verdict, v.stage, v.reason, v.ts_ms AS verdict_ms,
       datetime(v.ts_ms / 1000, 'unixepoch') AS verdict_at_utc,
       v.is_override, c.id AS candidate_id, v.id AS verdict_id, c.fingerprint
FROM candidates c
JOIN hosts h ON h.id = c.host_id
JOIN verdicts v ON v.id = (SELECT MAX(id) FROM verdicts WHERE candidate_id = c.id);
)SQL";

// The runtime's queue depth (running / waiting requests) on the rows that read it.
constexpr std::string_view kV5 = R"SQL(
ALTER TABLE probe_results ADD COLUMN server_running INTEGER;
ALTER TABLE probe_results ADD COLUMN server_waiting INTEGER;
)SQL";

// The thermal pressure level beside the memory figures (platform/thermal.h).
constexpr std::string_view kV6 = R"SQL(
ALTER TABLE host_samples ADD COLUMN thermal_level INTEGER;
)SQL";

// The golden set's answers (docs/DESIGN.md §3.13): one row per prompt and run,
// the steps as compact JSON (core/golden.h encode_steps: under 10 KB for a
// 64-token answer with its top-5).
constexpr std::string_view kV7 = R"SQL(
CREATE TABLE golden_answers (
  id           INTEGER PRIMARY KEY,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  stage_id     INTEGER REFERENCES stages(id),
  ts_ms        INTEGER NOT NULL,
  run          TEXT NOT NULL,
  set_hash     TEXT NOT NULL,
  prompt_id    TEXT NOT NULL,
  text_hash    TEXT NOT NULL,
  logprobs     TEXT NOT NULL,
  steps        TEXT NOT NULL
);
CREATE INDEX golden_answers_by_candidate ON golden_answers(candidate_id, id);
)SQL";

// A candidate's rows of one kind without reading its others: soakctl status
// reads the prefix-reuse rows of every candidate, which the (candidate_id, id)
// index could only find by reading each of the candidate's rows.
constexpr std::string_view kV8 = R"SQL(
CREATE INDEX probe_results_by_candidate_kind ON probe_results(candidate_id, kind, id);
)SQL";

// The common sampling settings as one character (storage/columns.h
// kCommonSampling): the rows already stored are rewritten to the mark.
constexpr std::string_view kV9 = R"SQL(
UPDATE probe_results SET sampling = '=' WHERE sampling = '{"temperature":0.6,"top_p":0.95,"top_k":20}';
)SQL";

// A running stage's sequential evidence as soakd last computed it
// (storage/store.h StageEvidence): soakctl status reads one row, not the
// stage's week of probe rows.
constexpr std::string_view kV10 = R"SQL(
CREATE TABLE stage_evidence (
  stage_id     INTEGER PRIMARY KEY REFERENCES stages(id),
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  ts_ms        INTEGER NOT NULL,
  probe_max_id INTEGER NOT NULL,
  measures     TEXT NOT NULL
);
)SQL";

// How long a request waited in the runtime's own queue (docs/DESIGN.md §2.2
// "Queued is not hung"), beside its TTFT.
constexpr std::string_view kV11 = R"SQL(
ALTER TABLE probe_results ADD COLUMN queue_wait_us INTEGER;
)SQL";

}  // namespace

std::string read_compat_sql(int user_version) {
  std::string out, missing;
  if (user_version < kFingerprintSchema) {
    out += "CREATE TEMP VIEW candidates AS SELECT *, '' AS fingerprint FROM main.candidates;\n";
    missing += ", NULL AS server_load_ms";
  }
  if (user_version < kQueueSchema) missing += ", NULL AS server_running, NULL AS server_waiting";
  if (user_version < kQueueWaitSchema) missing += ", NULL AS queue_wait_us";
  if (!missing.empty()) out += "CREATE TEMP VIEW probe_results AS SELECT *" + missing + " FROM main.probe_results;\n";
  if (user_version < kThermalSchema)
    out += "CREATE TEMP VIEW host_samples AS SELECT *, NULL AS thermal_level FROM main.host_samples;\n";
  return out;
}

const std::vector<std::string_view>& migrations() {
  static const std::vector<std::string_view> kMigrations{kV1, kV2, kV3, kV4, kV5, kV6, kV7, kV8, kV9, kV10, kV11};
  return kMigrations;
}

}  // namespace soak
