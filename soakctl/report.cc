// `soakctl report`: one static HTML page of a candidate (its verdict with the
// full argument, timeline, memory and the soak trend, host pressure, candidate
// beside baseline, long context, bursts), or without a candidate an index of
// every candidate (reports/). The judge's inputs are rebuilt from the recipe
// stored with each verdict (campaigns/recipe_store.h), as `explain` does.
#include "soakctl/common.h"

#include <string>

#include "campaigns/recipe_store.h"
#include "core/files.h"
#include "reports/page.h"

namespace soak::soakctl {

namespace {

// Reports are read by people and shared: readable by all, like any document.
constexpr unsigned kReportMode = 0644;

report::JudgedSource judged_source(Store& st) {
  return [&st](const VerdictRow& v) -> Result<std::optional<report::JudgedStage>> {
    auto recipe = recipe_from_json(v.judge_input_json);
    if (!recipe) return std::optional<report::JudgedStage>{};
    auto input = build_judge_input(st, *recipe);
    if (!input) return input.error();
    report::JudgedStage j;
    j.recomputed = judge_stage(*input);
    j.identical = same_verdict(v, j.recomputed);
    j.input = std::move(*input);
    return std::optional<report::JudgedStage>(std::move(j));
  };
}

int cmd_report(const Ctl& c, const Args& a, Store& st) {
  const auto file = a.get("html");
  if (!file || file->empty()) {
    c.err << "soakctl report: give --html FILE, the page to write (see soakctl --help)\n";
    return kCtlExitUsage;
  }
  const int64_t now = c.clock.wall_ms();
  std::string html;
  std::string what;
  if (a.positionals().size() > 1) {
    const std::string& name = a.positionals()[1];
    auto row = lookup_candidate(c, st, name, a.get("build"));
    if (!row) return kCtlExitStore;
    auto rep = report::build_candidate_report(st, *row, now, judged_source(st));
    if (!rep) {
      c.err << "soakctl: cannot build the report: " << rep.message() << "\n";
      return kCtlExitStore;
    }
    html = report::render_candidate(*rep);
    what = name + " at " + row->build;
  } else {
    if (a.get("build")) {
      c.err << "soakctl report: --build needs a CANDIDATE (see soakctl --help)\n";
      return kCtlExitUsage;
    }
    auto idx = report::build_index(st, now);
    if (!idx) {
      c.err << "soakctl: cannot build the index: " << idx.message() << "\n";
      return kCtlExitStore;
    }
    html = report::render_index(*idx);
    what = "index of " + std::to_string(idx->entries.size()) + " candidate row(s)";
  }
  if (auto w = write_file_atomic(*file, html, kReportMode); !w) {
    c.err << "soakctl: " << w.message() << "\n";
    return kCtlExitStore;
  }
  if (a.flag("json")) {
    c.out << json{{"file", *file}, {"bytes", html.size()}, {"report", what}}.dump(2) << "\n";
  } else {
    c.out << "wrote " << *file << " (" << what << ", " << (html.size() + 512) / 1024 << " KB)\n";
  }
  return kCtlExitOk;
}

}  // namespace

const Command kReportCommand{
    "report", Operand::OptionalCandidate, {{"json"}, {"build", "html"}}, OpenMode::ReadOnly, cmd_report};

}  // namespace soak::soakctl
