// RAII for libuv handles. A handle is freed only in its close callback, as libuv
// requires; destroying the owner starts the close. All calls on the loop thread.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <utility>

namespace soak {

// Owns one heap-allocated uv handle of type H. The handle's `data` field points
// at a user-supplied payload; close() is idempotent.
template <class H>
class UvHandle {
 public:
  UvHandle() : h_(new H{}) {}
  ~UvHandle() { close(); }
  UvHandle(const UvHandle&) = delete;
  UvHandle& operator=(const UvHandle&) = delete;

  H* get() const { return h_; }
  uv_handle_t* handle() const { return reinterpret_cast<uv_handle_t*>(h_); }
  bool initialized() const { return initialized_; }
  void mark_initialized() { initialized_ = true; }

  void close() {
    if (!h_) return;
    if (initialized_ && !uv_is_closing(handle())) {
      uv_close(handle(), [](uv_handle_t* h) { delete reinterpret_cast<H*>(h); });
    } else if (!initialized_) {
      delete h_;
    }
    h_ = nullptr;
  }

 private:
  H* h_;
  bool initialized_ = false;
};

// A repeating or one-shot timer bound to a std::function.
class Timer {
 public:
  explicit Timer(uv_loop_t* loop) {
    uv_timer_init(loop, t_.get());
    t_.mark_initialized();
    t_.get()->data = this;
  }
  // Fires `cb` after `timeout_ms`, then every `repeat_ms` (0 = once).
  void start(uint64_t timeout_ms, uint64_t repeat_ms, std::function<void()> cb) {
    cb_ = std::move(cb);
    uv_timer_start(
        t_.get(), [](uv_timer_t* h) { static_cast<Timer*>(h->data)->cb_(); }, timeout_ms, repeat_ms);
  }
  void stop() { uv_timer_stop(t_.get()); }
  void close() { t_.close(); }
  bool active() const { return uv_is_active(reinterpret_cast<const uv_handle_t*>(t_.get())) != 0; }

 private:
  UvHandle<uv_timer_t> t_;
  std::function<void()> cb_;
};

}  // namespace soak
