// The runtime's own queue, read for the HttpClient while soakd's requests are
// held in it (docs/DESIGN.md §2.2 "Queued is not hung"). A slot request whose
// first-content budget runs out before its first byte is held only while the
// runtime is busy; the client asks this reader, one per origin, whether it is,
// and it answers from the route the runtime's entry names (probes/runtimes/):
// a queue gauge of its /metrics (llama.cpp requests_deferred, vLLM
// num_requests_waiting), oMLX's status, else llama.cpp /slots — a waiting
// count first, since every slot busy on /slots may be soakd's own request in
// its slot. Each answer goes to HttpClient::report_queue: busy or not, and
// whether the queue moved since the previous reading (probes/queue_watch.h).
// It reads again every queue_poll_ms(stall timeout) while a request stays
// held there, and stops when none is.
//
// A route the runtime refuses (no --metrics, --no-slots) gives way to the
// next; a reading that gets no answer (timed out behind a wedged runtime,
// refused) is Unknown. A reading is bounded by the candidate's stall timeout,
// so a request held only until it comes stalls no later than a stall timeout
// after its budget.
//
// Ownership: EngineIo owns one per origin for the engine's life; it registers
// itself with the client (HttpClient::set_queue_reader) and removes itself
// when destroyed, which must be after the client's shutdown (as every
// exchange's). Threading: the loop thread.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/uv_util.h"
#include "probes/engine_exchange.h"
#include "probes/queue_watch.h"
#include "probes/runtimes/runtime.h"

namespace soak::probes {

class RuntimeQueueReader final : public QueueReader {
 public:
  // `cand`'s origin, read with its key and limits by `rt`'s routes; `rt` must
  // outlive the reader (entries are static).
  RuntimeQueueReader(EngineIo& io, const CandidateConfig& cand, const Runtime& rt);
  ~RuntimeQueueReader() override;
  RuntimeQueueReader(const RuntimeQueueReader&) = delete;
  RuntimeQueueReader& operator=(const RuntimeQueueReader&) = delete;

  // Whether the runtime has a route to read its queue from.
  static bool can_read(const Runtime& rt) { return first_busy_source(rt) != QueueSource::None; }

  void read() override;
  const std::string& origin() const { return origin_; }

 private:
  void on_answer(const ExchangeResult& x);
  void report(QueueState state, bool moved, std::string why);

  EngineIo& io_;
  CandidateConfig cand_;
  const Runtime& rt_;
  std::string origin_;
  QueueSource source_;
  std::optional<QueueReading> last_;
  std::unique_ptr<Exchange> live_;   // the reading in flight
  std::unique_ptr<Exchange> spent_;  // the last one, freed at the next reading (not inside its own done)
  Timer poll_;
};

}  // namespace soak::probes
