// Burst: for each configured N, N requests started in one loop pass (curl
// sends them back to back) on fresh connections, each with its own nonce so
// no two share a cached prefix. Each member is a row of its own (client
// concurrency N, one group id); when all have ended, a summary row
// (workload "burst/N/summary") carries p50/p95/max, aggregate tok/s, the send
// spread and the FIFO check. A serialized burst makes the summary row
// serialized_burst; the members keep their own outcomes, so one failure is
// never counted twice.
#include <algorithm>

#include "core/hash.h"
#include "probes/engine_rows.h"
#include "probes/probe_step.h"

namespace soak::probes {
namespace {

class BurstStep final : public Step {
 public:
  using Step::Step;
  void start() override { next_size(); }

 private:
  void next_size() {
    if (stop_if_cancelled()) return;
    const auto& sizes = env_.cand.settings.burst_sizes;
    if (i_ >= sizes.size()) return finish();
    n_ = std::max(1, sizes[i_++]);
    members_.clear();
    member_hashes_.clear();
    outstanding_ = n_;
    started_wall_ms_ = env_.io.clock.wall_ms();
    group_ = env_.group_id.value_or(started_wall_ms_);
    const ChatRequestOptions o = chat_options();
    const BuiltRequest plain = burst_request(o, 0, "");  // the prompt without index and nonce
    fixture_hash_ = hash_hex(plain.body);
    sampling_json_ = plain.sampling_json;
    const std::string workload = workload_id(ProbeKind::Burst, n_);
    // All N start in this one call: the same loop pass.
    for (int k = 0; k < n_; ++k) {
      ChatJob j;
      j.req = burst_request(o, k, env_.io.nonces.next());
      j.workload = workload;
      j.client_concurrency = n_;
      j.connection = ConnectionPolicy::Fresh;
      j.fixture_hash = fixture_hash_;
      run_chat(std::move(j), [this](ProbeResult& r, const ExchangeResult& x) { on_member(r, x); });
    }
  }

  void on_member(ProbeResult& r, const ExchangeResult& x) {
    r.group_id = group_;
    BurstMember m;
    m.outcome = r.outcome;
    m.start_ns = request_origin_ns(x.transfer.times);
    m.sent_ns = x.transfer.times.connected_ns;
    m.first_token_ns = x.chat.first_token_ns;
    m.last_token_ns = x.chat.last_token_ns;
    m.done_ns = x.transfer.times.done_ns;
    m.completion_tokens = r.completion_tokens ? r.completion_tokens
                                              : std::optional<int64_t>(static_cast<int64_t>(x.chat.token_arrivals_ns.size()));
    members_.push_back(m);
    member_hashes_ += r.body_hash;
    emit(std::move(r));
    if (--outstanding_ > 0) return;
    if (!cancelled()) summarize();
    next_size();
  }

  void summarize() {
    BurstSummary s = summarize_burst(members_);
    ProbeResult r = row(ProbeKind::Burst, workload_id(ProbeKind::Burst, n_, CacheState::None, "summary"));
    r.group_id = group_;
    r.client_concurrency = n_;
    r.started_wall_ms = started_wall_ms_;
    r.sampling_json = sampling_json_;
    r.fixture_hash = fixture_hash_;
    r.extra_json = s.to_json();
    r.body_hash = hash_hex(member_hashes_);  // the summary's "body" is its members' answers
    if (s.serialized) {
      r.outcome = Outcome::SerializedBurst;
      r.detail = std::to_string(n_) + " requests decoded strictly one after another (FIFO)";
    } else {
      r.outcome = Outcome::Clean;
    }
    emit(std::move(r));
  }

  size_t i_ = 0;
  int n_ = 0;
  int outstanding_ = 0;
  int64_t started_wall_ms_ = 0;
  int64_t group_ = 0;
  std::string sampling_json_;
  std::string fixture_hash_;
  std::vector<BurstMember> members_;
  std::string member_hashes_;
};

}  // namespace

std::unique_ptr<Step> make_burst_step(StepEnv env) { return std::make_unique<BurstStep>(std::move(env)); }

}  // namespace soak::probes
