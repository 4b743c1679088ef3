// The daemon side of the probe engine on literal values: which probe kinds
// each scheduled task runs, and what `soakd probe` prints.
#include <nlohmann/json.hpp>

#include "daemon/probe_cli.h"
#include "daemon/probe_task_runner.h"
#include "tests/catch.h"

using namespace soak;

TEST_CASE("each task runs its probe kinds") {
  CHECK(probe_kinds_for(TaskKind::Smoke) == std::vector<ProbeKind>{ProbeKind::Health, ProbeKind::Identity,
                                                                   ProbeKind::Marker, ProbeKind::Stream,
                                                                   ProbeKind::StrictJson, ProbeKind::ToolCall});
  CHECK(probe_kinds_for(TaskKind::Scrape) == std::vector<ProbeKind>{ProbeKind::Health, ProbeKind::Scrape});
  CHECK(probe_kinds_for(TaskKind::Functional) == std::vector<ProbeKind>{ProbeKind::Marker, ProbeKind::Stream,
                                                                        ProbeKind::StrictJson, ProbeKind::ToolCall,
                                                                        ProbeKind::Thinking, ProbeKind::Repetition});
  CHECK(probe_kinds_for(TaskKind::LongContext) == std::vector<ProbeKind>{ProbeKind::LongContext});
  CHECK(probe_kinds_for(TaskKind::Burst) == std::vector<ProbeKind>{ProbeKind::Burst});
  CHECK(probe_kinds_for(TaskKind::Cancel) == std::vector<ProbeKind>{ProbeKind::Cancel});
  CHECK(probe_kinds_for(TaskKind::Agent) == std::vector<ProbeKind>{ProbeKind::Agent});
  CHECK(probe_kinds_for(TaskKind::SoakTraffic) == std::vector<ProbeKind>{ProbeKind::Agent});
}

TEST_CASE("the probe table shows kind, workload, outcome, status, TTFT, rate, tokens and detail") {
  ProbeResult ok;
  ok.kind = ProbeKind::Stream;
  ok.workload_id = "stream";
  ok.outcome = Outcome::Clean;
  ok.http_status = 200;
  ok.t_first_token_us = 12'345;
  ok.client_decode_tps = 87.25;
  ok.prompt_tokens = 20;
  ok.completion_tokens = 32;
  ok.reasoning_tokens = 5;
  ok.extra_json = R"({"cold_ttft_us":900})";
  ProbeResult bad = ok;
  bad.kind = ProbeKind::ToolCall;
  bad.workload_id = "tool_call";
  bad.outcome = Outcome::EmptyToolArgs;
  bad.detail = "tool call lookup_weather has empty arguments\nsecond line";
  std::string t = format_probe_table({ok, bad});
  CHECK(t.find("stream") != std::string::npos);
  CHECK(t.find("12.3") != std::string::npos);
  CHECK(t.find("87.2") != std::string::npos);
  CHECK(t.find("20/32+5r") != std::string::npos);
  CHECK(t.find("empty_tool_args") != std::string::npos);
  CHECK(t.find("empty arguments second line") != std::string::npos);  // one line per row
  CHECK(t.find("2 row(s), 1 clean, 1 not clean") != std::string::npos);

  auto j = nlohmann::json::parse(format_probe_json("c", "b1", {ok, bad}));
  CHECK(j["build"] == "b1");
  // Every stored column by its stored name, as the store holds the row.
  CHECK(j["rows"][0]["t_first_token_us"] == 12345);
  CHECK(j["rows"][1]["outcome"] == "empty_tool_args");
  CHECK(j["rows"][1]["detail"] == "tool call lookup_weather has empty arguments\nsecond line");
  CHECK(j["rows"][0]["kind"] == "stream");
  CHECK(j["rows"][0].contains("queue_wait_us"));
  CHECK_FALSE(j["rows"][0].contains("outcome_category"));  // written for plain SQL, never read back
  CHECK(j["rows"][0]["extra"]["cold_ttft_us"] == 900);     // a stored document shown as one
  CHECK(j["rows"][0]["stage_id"].is_null());
  CHECK(j["all_clean"] == false);
}
