// The Outbox: every measured row, sample and event goes to the store through
// it, so that nothing measured is lost while the store cannot write
// (docs/DESIGN.md §4.9).
//
// While the store writes, put() writes at once and returns the row's id. When a
// write fails for a reason that can pass (storage/write_fault.h: full disk, a
// lock held past the busy timeout, a read-only file), the store is *paused*:
// that row and every later one wait in memory, in order, up to a bound
// (`store_outage.max_queued_rows`; past it new rows are dropped and counted).
// retry() writes what waits, oldest first, with a backoff between attempts
// (1 s doubling to 30 s). When the queue is empty again, one `gap` event with
// cause `store_unwritable` is written covering the pause, with the reason, how
// many rows waited and how many were dropped, and the store is writable again.
//
// While paused, Campaigns start no new work and apply no completion (work in
// flight finishes and its rows wait here): no stage is judged on evidence that
// was measured but not yet stored. A pause longer than
// `store_outage.stop_after` makes soakd stop with describe()'s message; launchd
// starts it again later.
//
// Threading: the daemon's loop thread only. Time: from the Clock it was given.
// Ownership: borrows the Store for its lifetime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/types.h"
#include "storage/store.h"

namespace soak {

inline constexpr int64_t kOutboxRetryFirstMs = 1'000;
inline constexpr int64_t kOutboxRetryMaxMs = 30'000;

struct StageUpdate {  // a stage row changed (closed, extended): update_stage
  StageRow stage;
};
// What can wait: every row that needs no id back at once. A stage's first
// insert needs its id, so a stage does not start while the store is paused.
using QueuedRow = std::variant<ProbeResult, HostSample, ProcessSample, Event, StageUpdate, VerdictRow>;

class Outbox {
 public:
  Outbox(Store& store, const Clock& clock, Logger log, int64_t host_id, StoreOutageSettings settings = {});

  void configure(const StoreOutageSettings& s) { settings_ = s; }
  // Told describe() whenever it changes (empty once the store writes again):
  // soakd puts it where `soakctl status` reads it (storage/lock.h).
  void set_on_state(std::function<void(const std::string&)> f) { on_state_ = std::move(f); }

  // Writes the row now (its id) unless rows already wait or the store refuses
  // it for a reason that passes (nullopt: it waits, or was dropped at the
  // bound). A row the store refuses for good is logged and counted lost.
  std::optional<int64_t> put(QueuedRow row);
  // Writes what waits once the backoff allows; true when nothing waits.
  bool retry();
  // The same at once, whatever the backoff (soakd is stopping).
  bool flush();
  // A write made straight to the store (one that needs its id) failed: a
  // reason that passes pauses the store like a failed put(). The caller
  // tries that write again once the store writes.
  void note_failure(const Error& error);

  bool paused() const { return since_ms_.has_value(); }
  std::optional<int64_t> next_retry_ms() const;
  // Paused for longer than store_outage.stop_after.
  bool overdue(int64_t now_ms) const;
  size_t waiting() const { return queue_.size(); }
  uint64_t dropped() const { return dropped_; }
  uint64_t lost() const { return lost_; }
  // "store not writable since 2026-11-30T21:04:59Z: database or disk is full; 12 rows waiting"
  // (empty while the store writes).
  std::string describe() const;

 private:
  Result<int64_t> write(const QueuedRow& row);
  void keep(QueuedRow row);
  void pause(const std::string& reason, int64_t now_ms);
  void resume(int64_t now_ms);
  void announce();  // says the store paused: the status note, then the log

  Store& store_;
  const Clock& clock_;
  Logger log_;
  int64_t host_id_;
  StoreOutageSettings settings_;
  std::deque<QueuedRow> queue_;
  std::optional<int64_t> since_ms_;
  std::string reason_;
  int64_t next_try_ms_ = 0;
  int64_t backoff_ms_ = kOutboxRetryFirstMs;
  size_t waited_ = 0;     // rows queued during this pause
  uint64_t dropped_ = 0;  // rows dropped at the bound, this pause
  uint64_t lost_ = 0;     // rows refused for good, since start
  std::function<void(const std::string&)> on_state_;
  void tell() {
    if (on_state_) on_state_(describe());
  }
};

}  // namespace soak
