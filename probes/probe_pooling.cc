// The pooling probes (embedding and rerank servers, docs/DESIGN.md §2.14).
//
// embeddings  two inputs, then the same request again: every vector of one
//             dimension, finite, of non-zero norm, and the same input must
//             give the same vector (cosine >= kSameVectorCosine); rows
//             "embeddings" and "embeddings/repeat", the dimension and norms in
//             extra_json. The repeat is the same batch, not the input alone:
//             llama-server's vectors depend on what shares the batch (0.64
//             cosine between an input sent with another and sent alone, with
//             the random-weight test model), which is not what is checked here.
// rerank      one query over three documents, twice: the order must be the
//             same both times; rows "rerank" and "rerank/repeat"
// burst       (a pooling candidate's burst) per configured N, N pooling
//             requests released at once on fresh connections, then a summary
//             row "burst/N/<kind>/summary" with requests/s and latencies
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "probes/engine_rows.h"
#include "probes/probe_step.h"
#include "probes/validators.h"

namespace soak::probes {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr double kSameVectorCosine = 0.9999;

const std::vector<std::string>& embedding_inputs() {
  static const std::vector<std::string> k{"soakd embedding probe, first input", "a second, different input"};
  return k;
}
const std::vector<std::string>& rerank_documents() {
  static const std::vector<std::string> k{"Bridges are inspected for corrosion and cracks.",
                                          "The lighthouse keeper lit the lamp at dusk.",
                                          "Inspectors look at bridge bearings and cables."};
  return k;
}
constexpr std::string_view kRerankQuery = "Why are bridges inspected?";

BuiltRequest pooling_request(ProbeKind kind, const std::string& model, size_t inputs) {
  if (kind == ProbeKind::Embeddings) {
    std::vector<std::string> in(embedding_inputs().begin(), embedding_inputs().begin() + inputs);
    return embeddings_request(model, in);
  }
  return rerank_request(model, kRerankQuery, rerank_documents());
}

std::vector<std::vector<double>> vectors_of(std::string_view body) {
  std::vector<std::vector<double>> out;
  json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return out;
  for (const auto& d : j["data"]) {
    std::vector<double> v;
    if (d.is_object() && d.contains("embedding") && d["embedding"].is_array())
      for (const auto& x : d["embedding"]) v.push_back(x.is_number() ? x.get<double>() : 0.0);
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<int64_t> order_of(std::string_view body) {
  std::vector<int64_t> out;
  json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array()) return out;
  for (const auto& r : j["results"])
    if (r.is_object() && r.contains("index") && r["index"].is_number_integer())
      out.push_back(r["index"].get<int64_t>());
  return out;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return 0;
  double dot = 0;
  for (size_t i = 0; i < a.size(); ++i) dot += a[i] * b[i];
  const double n = norm(a) * norm(b);
  return n > 0 ? dot / n : 0;
}

class PoolingStep final : public Step {
 public:
  PoolingStep(ProbeKind kind, StepEnv env) : Step(std::move(env)), kind_(kind) {}
  void start() override { send_one(CacheState::None); }

 private:
  void send_one(CacheState cache) {
    if (stop_if_cancelled()) return;
    const size_t inputs = embedding_inputs().size();
    const BuiltRequest req = pooling_request(kind_, env_.cand.model, inputs);
    ExchangeSpec spec;
    spec.method = "POST";
    spec.path = req.path;
    spec.body = req.body;
    send(std::move(spec), [this, cache, inputs](const ExchangeResult& x) {
      ProbeResult r = plain_row(kind_, workload_id(kind_, std::nullopt, cache), x);
      r.cache_state = cache;
      if (r.outcome == Outcome::Clean) judge(r, x.transfer.body, cache, inputs);
      const bool first_clean = cache == CacheState::None && r.outcome == Outcome::Clean;
      emit(std::move(r));
      if (first_clean) return send_one(CacheState::Repeat);  // the same input again
      finish();
    });
  }

  void judge(ProbeResult& r, const std::string& body, CacheState cache, size_t inputs) {
    if (kind_ == ProbeKind::Rerank) {
      set_verdict(r, check_rerank(body, rerank_documents().size()), body);
      if (r.outcome != Outcome::Clean) return;
      const auto order = order_of(body);
      r.extra_json = ojson{{"order", order}}.dump();
      if (cache == CacheState::None) {
        first_order_ = order;
      } else if (order != first_order_) {
        set_verdict(r, {Outcome::MalformedResponse, "the same query and documents were ranked in a different order"},
                    body);
      }
      return;
    }
    set_verdict(r, check_embeddings(body, inputs), body);
    if (r.outcome != Outcome::Clean) return;
    const auto vs = vectors_of(body);
    ojson norms = ojson::array();
    for (const auto& v : vs) norms.push_back(norm(v));
    r.extra_json = ojson{{"dimension", vs.empty() ? 0 : vs.front().size()}, {"norms", norms}}.dump();
    for (size_t i = 0; i < vs.size(); ++i)
      if (norm(vs[i]) == 0)
        return set_verdict(r, {Outcome::MalformedResponse, "embedding " + std::to_string(i) + " has norm 0"}, body);
    if (cache == CacheState::None) {
      first_vectors_ = vs;
      return;
    }
    for (size_t i = 0; i < vs.size() && i < first_vectors_.size(); ++i) {
      if (vs[i].size() != first_vectors_[i].size())
        return set_verdict(r,
                           {Outcome::MalformedResponse, "input " + std::to_string(i) + " came back with dimension " +
                                                            std::to_string(vs[i].size()) + ", first " +
                                                            std::to_string(first_vectors_[i].size())},
                           body);
      const double c = cosine(vs[i], first_vectors_[i]);
      if (c < kSameVectorCosine)
        return set_verdict(
            r,
            {Outcome::MalformedResponse,
             "the same input " + std::to_string(i) + " gave a different vector (cosine " + std::to_string(c) + ")"},
            body);
    }
  }

  ProbeKind kind_;
  std::vector<std::vector<double>> first_vectors_;
  std::vector<int64_t> first_order_;
};

class PoolingBurstStep final : public Step {
 public:
  explicit PoolingBurstStep(StepEnv env)
      : Step(std::move(env)),
        kind_(env_.cand.kind == WorkloadKind::Rerank ? ProbeKind::Rerank : ProbeKind::Embeddings) {}
  void start() override { next_size(); }

 private:
  void next_size() {
    const int* size = take_next(env_.cand.settings.burst_sizes, i_);
    if (!size) return;
    n_ = std::max(1, *size);
    outstanding_ = n_;
    walls_ms_.clear();
    clean_ = 0;
    first_start_ms_.reset();
    last_end_us_ = 0;
    const BuiltRequest req = pooling_request(kind_, env_.cand.model, embedding_inputs().size());
    workload_ = workload_id(ProbeKind::Burst, n_, CacheState::None, to_string(env_.cand.kind));
    for (int k = 0; k < n_; ++k) {
      ExchangeSpec spec;
      spec.method = "POST";
      spec.path = req.path;
      spec.body = req.body;
      spec.connection = ConnectionPolicy::Fresh;
      send(std::move(spec), [this, hash = hash_hex(req.body)](const ExchangeResult& x) {
        ProbeResult r = plain_row(ProbeKind::Burst, workload_, x);
        r.size_tokens = n_;
        r.client_concurrency = n_;
        r.fixture_hash = hash;
        if (r.outcome == Outcome::Clean) {
          const Verdict v = kind_ == ProbeKind::Embeddings
                                ? check_embeddings(x.transfer.body, embedding_inputs().size())
                                : check_rerank(x.transfer.body, rerank_documents().size());
          set_verdict(r, v, x.transfer.body);
        }
        note(r);
        emit(std::move(r));
        if (--outstanding_ == 0) summarize();
      });
    }
  }

  void note(const ProbeResult& r) {
    if (!first_start_ms_ || r.started_wall_ms < *first_start_ms_) first_start_ms_ = r.started_wall_ms;
    if (r.outcome == Outcome::Clean && r.t_done_us) {
      ++clean_;
      walls_ms_.push_back(static_cast<double>(*r.t_done_us) / 1000.0);
      last_end_us_ = std::max(last_end_us_, (r.started_wall_ms - *first_start_ms_) * 1000 + *r.t_done_us);
    }
  }

  void summarize() {
    if (cancelled()) return finish();
    ProbeResult s = row(ProbeKind::Burst, workload_ + "/summary");
    s.size_tokens = n_;
    s.client_concurrency = n_;
    s.started_wall_ms = first_start_ms_.value_or(0);
    s.outcome = Outcome::Clean;
    std::sort(walls_ms_.begin(), walls_ms_.end());
    const double span_s = static_cast<double>(last_end_us_) / 1e6;
    ojson j;
    j["n"] = n_;
    j["clean"] = clean_;
    j["rps"] = span_s > 0 ? ojson(static_cast<double>(clean_) / span_s) : ojson(nullptr);
    j["p50_ms"] = walls_ms_.empty() ? ojson(nullptr) : ojson(walls_ms_[walls_ms_.size() / 2]);
    j["max_ms"] = walls_ms_.empty() ? ojson(nullptr) : ojson(walls_ms_.back());
    s.extra_json = j.dump();
    emit(std::move(s));
    next_size();
  }

  ProbeKind kind_;
  size_t i_ = 0;
  int n_ = 0;
  int outstanding_ = 0;
  int clean_ = 0;
  std::string workload_;
  std::vector<double> walls_ms_;
  std::optional<int64_t> first_start_ms_;
  int64_t last_end_us_ = 0;
};

}  // namespace

std::unique_ptr<Step> make_pooling_step(ProbeKind kind, StepEnv env) {
  return std::make_unique<PoolingStep>(kind, std::move(env));
}
std::unique_ptr<Step> make_pooling_burst_step(StepEnv env) {
  return std::make_unique<PoolingBurstStep>(std::move(env));
}

}  // namespace soak::probes
