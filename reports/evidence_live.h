// The sequential test's evidence while a stage runs (judges/sequential.h), for
// readers outside the daemon: `soakctl status` and the metrics textfile.
//
// The daemon judges a running stage with its configuration's rules; these
// readers have the store only, so they take the rules of the candidate's
// latest judged stage (the campaign's previous stage: smoke before the
// canary, and so on), or the defaults before any. The rows are the stage's
// own, so both see the same evidence unless the configuration's judge rules
// were reloaded during the campaign (then the daemon's decides).
//
// Thread-agnostic; uses the Store it is given.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/types.h"
#include "judges/judge.h"
#include "judges/sequential.h"
#include "storage/store.h"

namespace soak::report {

// The recipe a running stage's evidence is computed with: the latest judged
// recipe of the candidate row with the running stage's kind and id, and the
// candidate row's baseline after smoke (what the daemon's recipe names).
Result<JudgeRecipe> running_recipe(Store& store, int64_t candidate_id, const StageRow& stage);

// A row as the sequential test reads it: the text it never looks at left out
// (its figures kept, and a session turn its extra_json, which says whether it
// asked for a tool call), so a collector can keep a week's rows of a stage.
ProbeResult slim_row(ProbeResult r);

// The baseline rows a running stage's evidence reads (latency_slo, paired),
// chosen as the daemon chooses them (campaigns/recipe_store.h
// choose_baseline): the recipe's baseline's rows since the stage began
// (interleaved) when it has any, else its rows of the kHistoryLookbackMs
// before (history). Sets recipe.baseline_mode; appends to `rows` the slimmed
// rows with ids above `read_to` up to `max_id` and moves `read_to` on, so a
// collector reads each row once (a history baseline's, fixed at the stage's
// start, once only, and its first row in the window, or in the lookback when it
// had none there, looked for only among the rows stored since the last look).
// Host samples are not read: a row measured hot counts here where the daemon's
// judgment leaves it out of latency_slo.
Status extend_running_baseline(Store& store, JudgeRecipe& recipe, const StageRow& stage, std::vector<ProbeResult>& rows,
                               int64_t& read_to, int64_t max_id);

// Every watched measure of a running stage, from its rows so far; empty when
// the stage is not running or watches nothing (smoke).
Result<std::vector<SequentialMeasure>> running_evidence(Store& store, int64_t candidate_id, const StageRow& stage);

// The same evidence kept up to date by a long-lived reader (the daemon's
// snapshot writer, the metrics textfile): each refresh reads only the rows
// stored since the last one, and gives what running_evidence would give from
// all of them. A new stage of the candidate starts it afresh.
class LiveEvidence {
 public:
  // Reads the stage's rows above the last refresh up to `max_probe` (or takes
  // them from `fresh`: the stage's rows in that id range, read by the caller).
  Status refresh(Store& store, int64_t candidate_id, const StageRow& stage, int64_t max_probe);
  Status refresh(Store& store, int64_t candidate_id, const StageRow& stage, int64_t max_probe,
                 const std::vector<ProbeResult>& fresh);
  const std::vector<SequentialMeasure>& measures() const { return evidence_; }
  // Its decisive rules' way to their evidence (judges/judge.h evidence_progress).
  const std::vector<EvidenceProgress>& progress() const { return progress_; }
  int64_t stage_id() const { return stage_id_; }
  int64_t read_to() const { return read_to_; }  // the rows up to this id are in

 private:
  int64_t stage_id_ = 0;
  int64_t read_to_ = 0;
  std::vector<ProbeResult> rows_;  // slimmed
  std::optional<JudgeRecipe> recipe_;
  std::vector<ProbeResult> baseline_rows_;
  int64_t baseline_read_to_ = 0;
  std::vector<SequentialMeasure> evidence_;
  std::vector<EvidenceProgress> progress_;
};

// soakd's writer of StageEvidence rows (storage/store.h): each running
// stage's evidence brought up to date and stored, so `soakctl status` reads
// one row per stage where it would read the stage's rows.
inline constexpr int64_t kStageEvidenceEveryMs = 60'000;  // how often soakd refreshes them at most
class StageEvidenceWriter {
 public:
  // Refreshes and stores each running stage's evidence last refreshed
  // `every_ms` or more before `now_ms`. A stage not read yet (a daemon started
  // mid-soak: a week of rows, a few hundred ms) is read at most `max_first`
  // per call, so the caller's loop never stalls for all of them at once.
  Status refresh(Store& store, int64_t now_ms, int64_t every_ms = 0, int max_first = 1 << 30);
  // Whether a refresh would do anything for these candidates (those with a
  // running stage after smoke): one not seen yet, or one due. A candidate's
  // next stage is seen when it is next due.
  bool due(const std::vector<int64_t>& candidates, int64_t now_ms, int64_t every_ms) const;
  // Another reader that keeps the same evidence up to date (the metrics
  // textfile): what it returns for a candidate, when it is of the running
  // stage, is stored instead of a copy of the stage's rows kept here.
  using Shared = std::function<const LiveEvidence*(int64_t candidate_id)>;
  void share_from(Shared shared) { shared_ = std::move(shared); }

 private:
  struct Live {
    int64_t stage_id = 0;
    LiveEvidence evidence;   // empty while a shared one serves
    int64_t stored_to = -1;  // the read_to of the row stored last (-1: none yet)
    std::optional<int64_t> refreshed_ms;
  };
  std::map<int64_t, Live> live_;  // by candidate row
  Shared shared_;
};

// A stage's measures as the store keeps them (storage/store.h StageEvidence):
// each measure's name, budget, alpha, basis and its last, peak and stop points
// (not its path). Fails on text that is not such an array.
std::string measures_to_json(const std::vector<SequentialMeasure>& ms);
// Either the array above (stored before the evidence progress) or the object
// stage_evidence_json writes.
Result<std::vector<SequentialMeasure>> measures_from_json(const std::string& s);
// What soakd stores: {"measures": [as above], "progress": [{rule, had,
// needed, unit}]}; progress_from_json reads the latter (empty from an array).
std::string stage_evidence_json(const std::vector<SequentialMeasure>& ms,
                                const std::vector<EvidenceProgress>& progress);
std::vector<EvidenceProgress> progress_from_json(const std::string& s);

}  // namespace soak::report
