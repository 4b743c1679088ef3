// Cancel: a long streamed answer cut after a few output events, then proof
// that the runtime freed the slot — /slots showing no more busy slots than
// soakd's other chat requests to this runtime (polled until the bound), or,
// where the runtime has no /slots (or it is not served), a follow-up request
// whose first content arrives within the bound. A runtime that counts the
// aborts it did for a client that left (its entry's
// PromSeries::client_cancels; Rapid-MLX's, probes/runtimes/rapid_mlx.cc) has
// the direct proof: the counter rising past its value before the request.
// Otherwise the row is stale_slot. One row: the cut stream's timings, the
// proof in extra_json.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "core/uv_util.h"
#include "probes/engine_rows.h"
#include "probes/probe_step.h"
#include "probes/prometheus.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

// The runtime's own count of requests it aborted because the client left.
std::optional<double> disconnect_cancels(const ExchangeResult& x, std::string_view series) {
  if (classify_plain(x.end, x.transfer).outcome != Outcome::Clean) return std::nullopt;
  return parse_prometheus_text(x.transfer.body).value(series);
}

class CancelStep final : public Step {
 public:
  explicit CancelStep(StepEnv env) : Step(std::move(env)), timer_(env_.io.loop) {}

  void start() override {
    if (!cancels().empty() && env_.runtime.metrics) {
      // Its count before the request, so the cut's own abort shows as a rise.
      send(route(*env_.runtime.metrics), [this](const ExchangeResult& x) {
        counter_before_ = disconnect_cancels(x, cancels());
        if (cancelled()) return finish();
        cut_stream();
      });
      return;
    }
    cut_stream();
  }

 private:
  std::string_view cancels() const { return env_.runtime.series.client_cancels; }

  void cut_stream() {
    ChatJob j;
    j.req = cancel_request(chat_options(), env_.io.nonces.next());
    j.workload = workload_id(ProbeKind::Cancel);
    j.cut_after_tokens = env_.opts.cancel_cut_tokens;
    j.expects_answer = false;                                            // cut on purpose after a few tokens
    j.fixture_hash = hash_hex(cancel_request(chat_options(), "").body);  // the prompt without its nonce
    run_chat(std::move(j), [this](ProbeResult& r, const ExchangeResult& x) { on_cut(r, x); });
  }

  void on_cancel() override {
    if (!waiting_) return;
    timer_.stop();
    waiting_ = false;
    set_verdict(row_, {Outcome::CancelledByDaemon, "cancelled by soakd while checking the slot"}, "");
    emit(std::move(row_));
  }

  void on_cut(ProbeResult& r, const ExchangeResult& x) {
    row_ = std::move(r);
    cut_ = x.cut;
    if (x.cut) set_verdict(row_, {Outcome::Clean, ""}, "");
    // A stream that failed before the cut says nothing about freeing a slot.
    if (row_.outcome != Outcome::Clean || cancelled()) {
      emit(std::move(row_));
      return finish();
    }
    cut_ns_ = env_.io.clock.mono_ns();
    if (env_.runtime.slots && env_.runtime.read_slots) return poll();
    if (counter_before_) return poll_counter();
    follow_up();
  }

  void poll_counter() {
    waiting_ = false;
    checked_by_ = "disconnect_counter";
    send(route(*env_.runtime.metrics), [this](const ExchangeResult& x) {
      if (cancelled()) return end_cancelled();
      std::optional<double> now = disconnect_cancels(x, cancels());
      if (!now) return follow_up();  // the metric went away: fall back
      if (*now > *counter_before_) return freed();
      if (elapsed_ms() >= env_.opts.slot_free_bound_ms)
        return stale(std::string(cancels()) + " still " + std::to_string(static_cast<int64_t>(*now)) + " " +
                     std::to_string(elapsed_ms()) + " ms after the cut: the runtime did not abort the request");
      waiting_ = true;
      timer_.start(static_cast<uint64_t>(env_.opts.slot_poll_ms), 0, [this] { poll_counter(); });
    });
  }

  int64_t elapsed_ms() const { return (env_.io.clock.mono_ns() - cut_ns_) / 1'000'000; }

  void poll() {
    waiting_ = false;
    checked_by_ = "slots";
    send(route(*env_.runtime.slots), [this](const ExchangeResult& x) {
      if (cancelled()) return end_cancelled();
      std::optional<SlotSummary> sum;
      if (classify_plain(x.end, x.transfer).outcome == Outcome::Clean)
        if (auto s = env_.runtime.read_slots(x.transfer.body)) sum = summarize_slots(*s);
      if (!sum) return follow_up();  // /slots not served (e.g. --no-slots): fall back
      const int others = env_.io.live_chat[env_.cand.base_url];
      if (sum->busy <= others) return freed();
      if (elapsed_ms() >= env_.opts.slot_free_bound_ms) {
        return stale("slot still busy " + std::to_string(elapsed_ms()) + " ms after the cut (" +
                     std::to_string(sum->busy) + " of " + std::to_string(sum->total) + " busy, " +
                     std::to_string(others) + " other request(s) of soakd in flight)");
      }
      waiting_ = true;
      timer_.start(static_cast<uint64_t>(env_.opts.slot_poll_ms), 0, [this] { poll(); });
    });
  }

  void follow_up() {
    checked_by_ = "follow_up";
    ChatJob j;
    j.req = stream_request(chat_options());
    j.workload = workload_id(ProbeKind::Cancel);
    // Its first content must come within what is left of the bound.
    j.stall_timeout_ms = std::max<int64_t>(1, env_.opts.slot_free_bound_ms - elapsed_ms());
    run_chat(std::move(j), [this](ProbeResult& r, const ExchangeResult& x) {
      if (r.outcome == Outcome::CancelledByDaemon || cancelled()) return end_cancelled();
      if (r.outcome == Outcome::Clean) return freed();
      if (r.outcome == Outcome::Stalled || (r.outcome == Outcome::Timeout && !x.chat.first_token_ns)) {
        return stale("follow-up request got no content within " + std::to_string(env_.opts.slot_free_bound_ms) +
                     " ms of the cut");
      }
      set_verdict(row_, {r.outcome, "follow-up after the cut: " + r.detail}, r.excerpt);
      end();
    });
  }

  // Emits the row with how the slot was checked and, when freed, after how long.
  void end() {
    ojson e;
    e["cut"] = cut_;
    e["cut_after_tokens"] = env_.opts.cancel_cut_tokens;
    e["checked_by"] = checked_by_;
    e["freed_after_ms"] = row_.outcome == Outcome::Clean ? ojson(elapsed_ms()) : ojson(nullptr);
    row_.extra_json = e.dump();
    emit(std::move(row_));
    finish();
  }

  void freed() { end(); }

  void stale(std::string why) {
    set_verdict(row_, {Outcome::StaleSlot, std::move(why)}, "");
    end();
  }

  void end_cancelled() {
    set_verdict(row_, {Outcome::CancelledByDaemon, "cancelled by soakd while checking the slot"}, "");
    emit(std::move(row_));
    finish();
  }

  Timer timer_;
  ProbeResult row_;
  std::string checked_by_;
  std::optional<double> counter_before_;  // Rapid-MLX disconnect-cancel count before the request
  bool cut_ = false;
  bool waiting_ = false;
  int64_t cut_ns_ = 0;
};

}  // namespace

std::unique_ptr<Step> make_cancel_step(StepEnv env) { return std::make_unique<CancelStep>(std::move(env)); }

}  // namespace soak::probes
