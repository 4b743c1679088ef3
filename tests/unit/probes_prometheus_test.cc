// Prometheus text parser: every /metrics capture of the real llama-server, and
// literal strings for the grammar's corners (vLLM and Rapid-MLX shapes).
#include <cmath>
#include <limits>
#include <string>

#include "probes/prometheus.h"
#include "probes/runtime_metrics.h"
#include "probes/runtimes/catalog.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak::probes;

namespace {
PromText capture(const std::string& name) {
  auto cap = probes_local::load_capture(name);
  REQUIRE(cap.status == 200);
  return parse_prometheus_text(cap.body);
}
}  // namespace

TEST_CASE("metrics while busy: two requests processing, one deferred") {
  PromText t = capture("get-metrics-while-busy.http");
  CHECK(t.errors.empty());
  CHECK(t.samples.size() == 11);
  CHECK(t.families.size() == 11);
  CHECK(t.value("llamacpp:requests_processing") == 2);
  CHECK(t.value("llamacpp:requests_deferred") == 1);
  CHECK(t.value("llamacpp:prompt_tokens_total") == 449);
  CHECK(t.value("llamacpp:tokens_predicted_total") == 679);
  CHECK(*t.value("llamacpp:n_busy_slots_per_decode") == Approx(1.23086));
  CHECK(*t.value("llamacpp:prompt_seconds_total") == Approx(0.142));
  const PromFamily* f = t.family("llamacpp:prompt_tokens_total");
  REQUIRE(f);
  CHECK(f->type == "counter");
  CHECK(f->help == "Number of prompt tokens processed.");
  CHECK(t.family("llamacpp:requests_deferred")->type == "gauge");
}

TEST_CASE("every other metrics capture parses with the values it shows") {
  PromText fresh = capture("get-metrics-fresh.http");
  CHECK(fresh.errors.empty());
  CHECK(fresh.samples.size() == 11);
  for (const auto& s : fresh.samples) CHECK(s.value == 0);

  PromText basic = capture("get-metrics-after-basic.http");
  CHECK(basic.errors.empty());
  CHECK(basic.value("llamacpp:prompt_tokens_total") == 417);
  CHECK(basic.value("llamacpp:n_busy_slots_per_decode") == 1);

  PromText busy = capture("get-metrics-after-busy.http");
  CHECK(busy.errors.empty());
  CHECK(busy.value("llamacpp:tokens_predicted_total") == 5179);
  CHECK(busy.value("llamacpp:n_tokens_max") == 1515);
  CHECK(busy.value("llamacpp:requests_processing") == 0);

  PromText disc = capture("get-metrics-after-disconnect.http");
  CHECK(disc.errors.empty());
  CHECK(disc.value("llamacpp:n_decode_total") == 4051);
  // A dropped stream does not add to the predicted-token counter.
  CHECK(disc.value("llamacpp:tokens_predicted_total") == busy.value("llamacpp:tokens_predicted_total"));
}

TEST_CASE("labels with escapes, special values, exponents and timestamps") {
  PromText t = parse_prometheus_text(
      "# HELP vllm:num_requests_running Number of requests \\\\ running\\nnow.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"Qwen/Qwen3-8B\",engine=\"0\"} 3\n"
      "weird{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\",} 1.5e3 1700000000000\n"
      "  spaced_metric  \t  -2.5E-2\r\n"
      "nan_metric NaN\n"
      "pinf +Inf\n"
      "ninf -Inf\n"
      "inf_plain Inf\n"
      "# just a comment\n"
      "\n"
      "rapid_mlx_build_info{version=\"0.9.2\",model=\"mlx-community/Qwen3-8B-4bit\"} 1\n"
      "empty_labels{} 7\n");
  CHECK(t.errors.empty());
  REQUIRE(t.samples.size() == 9);
  const PromFamily* f = t.family("vllm:num_requests_running");
  REQUIRE(f);
  CHECK(f->help == "Number of requests \\ running\nnow.");
  CHECK(t.value("vllm:num_requests_running", {{"model_name", "Qwen/Qwen3-8B"}}) == 3);
  CHECK_FALSE(t.value("vllm:num_requests_running", {{"model_name", "other"}}));

  const PromSample* w = t.find("weird");
  REQUIRE(w);
  CHECK(*w->label("path") == "C:\\dir");
  CHECK(*w->label("quote") == "say \"hi\"");
  CHECK(*w->label("nl") == "a\nb");
  CHECK(w->value == 1500);
  CHECK(w->timestamp_ms == 1700000000000);

  CHECK(*t.value("spaced_metric") == Approx(-0.025));
  CHECK(std::isnan(*t.value("nan_metric")));
  CHECK(*t.value("pinf") == std::numeric_limits<double>::infinity());
  CHECK(*t.value("ninf") == -std::numeric_limits<double>::infinity());
  CHECK(*t.value("inf_plain") == std::numeric_limits<double>::infinity());
  CHECK(*t.find("rapid_mlx_build_info")->label("version") == "0.9.2");
  CHECK(t.find("empty_labels")->labels.empty());
}

TEST_CASE("bad lines become per-line errors and parsing continues") {
  PromText t = parse_prometheus_text(
      "good_one 1\n"
      "9starts_with_digit 1\n"
      "no_value\n"
      "bad_value abc\n"
      "bad_label{x=unquoted} 1\n"
      "open_label{x=\"1\" 1\n"
      "bad_escape{x=\"\\t\"} 1\n"
      "dup{a=\"1\",a=\"2\"} 1\n"
      "ts_bad 1 12x\n"
      "trailing 1 12 extra\n"
      "# TYPE thing bogus\n"
      "# TYPE\n"
      "good_two 2\n");
  CHECK(t.samples.size() == 2);
  CHECK(t.value("good_one") == 1);
  CHECK(t.value("good_two") == 2);
  REQUIRE(t.errors.size() == 11);
  CHECK(t.errors[0].line == 2);
  CHECK(t.errors[2].message.find("bad value") != std::string::npos);
  CHECK(t.errors[5].message.find("escape") != std::string::npos);
  CHECK(t.errors[6].message.find("duplicate") != std::string::npos);
  CHECK(t.errors[9].message.find("bogus") != std::string::npos);
}

TEST_CASE("a histogram family keeps its bucket, sum and count samples") {
  PromText t = parse_prometheus_text(
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 4\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 9\n"
      "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 2.25\n"
      "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 9\n");
  CHECK(t.errors.empty());
  CHECK(t.family("vllm:time_to_first_token_seconds")->type == "histogram");
  CHECK(t.value("vllm:time_to_first_token_seconds_bucket", {{"le", "+Inf"}}) == 9);
  CHECK(t.value("vllm:time_to_first_token_seconds_sum") == 2.25);
}

TEST_CASE("values are decimal only: hex floats and half exponents are errors") {
  PromText t = parse_prometheus_text("hex 0x1p3\nhalf 1e\nsign_only -\nok 2.5e-1\n");
  CHECK(t.errors.size() == 3);
  CHECK(t.value("ok") == 0.25);
}

// Queue depth per runtime: llama.cpp tools/server/server-context.cpp (metrics:
// requests_processing, requests_deferred); vLLM vllm/v1/metrics/loggers.py
// (vllm:num_requests_running / _waiting, one sample per engine and model
// name); Rapid-MLX vllm_mlx/routes/metrics.py (rapid_mlx_requests_running /
// _waiting).
TEST_CASE("queue depth: running and waiting from each runtime's own series") {
  QueueDepth llama = queue_depth_from_metrics(builtin_runtime(soak::RuntimeKind::LlamaCpp).series,
                                              capture("get-metrics-while-busy.http"));
  CHECK(llama.running == 2);
  CHECK(llama.waiting == 1);

  PromText vllm = parse_prometheus_text(
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"q\"} 3.0\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"q\"} 2.0\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"q\"} 4.0\n");
  QueueDepth v = queue_depth_from_metrics(builtin_runtime(soak::RuntimeKind::Vllm).series, vllm);
  CHECK(v.running == 5);
  CHECK(v.waiting == 4);

  PromText rapid = parse_prometheus_text("rapid_mlx_requests_running 1\nrapid_mlx_requests_waiting 0\n");
  QueueDepth r = queue_depth_from_metrics(builtin_runtime(soak::RuntimeKind::RapidMlx).series, rapid);
  CHECK(r.running == 1);
  CHECK(r.waiting == 0);

  // Another runtime's names are not read as this one's.
  CHECK_FALSE(queue_depth_from_metrics(builtin_runtime(soak::RuntimeKind::Vllm).series, rapid).running);
  CHECK_FALSE(queue_depth_from_metrics(builtin_runtime(soak::RuntimeKind::Ollama).series, vllm).running);
}

// Speculative counters beside llama.cpp's per-answer draft_n: vLLM
// vllm/v1/spec_decode/metrics.py (spec_decode_num_drafts / num_draft_tokens /
// num_accepted_tokens counters, `_total` on /metrics, one per engine);
// Rapid-MLX vllm_mlx/routes/metrics.py _render_spec_decode_mtp_counters
// (attempts_total, accepts_total).
TEST_CASE("speculative counters: vLLM and Rapid-MLX, summed over engines") {
  PromText vllm = parse_prometheus_text(
      "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"q\"} 10\n"
      "vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"q\"} 5\n"
      "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"q\"} 40\n"
      "vllm:spec_decode_num_draft_tokens_total{engine=\"1\",model_name=\"q\"} 20\n"
      "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"q\"} 30\n"
      "vllm:spec_decode_num_accepted_tokens_total{engine=\"1\",model_name=\"q\"} 15\n");
  SpecCounters v = spec_counters_from_metrics(builtin_runtime(soak::RuntimeKind::Vllm).series, vllm);
  CHECK(v.drafts == 15);
  CHECK(v.drafted == 60);
  CHECK(v.accepted == 45);

  PromText rapid = parse_prometheus_text(
      "rapid_mlx_spec_decode_attempts_total{family=\"qwen3.5\",method=\"mtp\"} 8\n"
      "rapid_mlx_spec_decode_accepts_total{family=\"qwen3.5\",method=\"mtp\"} 6\n");
  SpecCounters r = spec_counters_from_metrics(builtin_runtime(soak::RuntimeKind::RapidMlx).series, rapid);
  CHECK(r.drafted == 8);
  CHECK(r.accepted == 6);
  CHECK(r.drafts == 8);

  CHECK_FALSE(spec_counters_from_metrics(builtin_runtime(soak::RuntimeKind::Vllm).series, rapid)
                  .drafted);  // no speculative decoding
}
