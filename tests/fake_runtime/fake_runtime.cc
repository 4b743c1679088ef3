#include "tests/fake_runtime/fake_runtime.h"

#include <pthread.h>
#include <signal.h>
#include <uv.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

namespace soak::fake {

struct FakeRuntime::Impl {
  std::vector<ListenerConfig> configs;
  CrashMode crash;
  SystemClock clock;

  std::thread thread;
  uv_loop_t loop{};
  uv_async_t wake{};
  std::vector<std::unique_ptr<Listener>> listeners;  // loop thread only

  mutable std::mutex mu;
  mutable std::condition_variable changed;
  std::vector<ListenerStats> board;          // guarded by mu
  std::vector<std::function<void()>> tasks;  // guarded by mu
  bool accepting = false;                    // wake is open; guarded by mu
  bool stop_requested = false;               // guarded by mu
  bool started = false;

  // Runs `task` on the loop thread; false once the loop no longer takes tasks.
  bool post(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu);
    if (!accepting) return false;
    tasks.push_back(std::move(task));
    uv_async_send(&wake);
    return true;
  }

  void drain_tasks() {
    std::vector<std::function<void()>> run;
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mu);
      run.swap(tasks);
      stopping = stop_requested;
    }
    for (auto& t : run) t();
    if (stopping) {
      for (auto& l : listeners) l->shutdown();
      std::lock_guard<std::mutex> lock(mu);
      accepting = false;
      uv_close(reinterpret_cast<uv_handle_t*>(&wake), nullptr);
    }
  }

  void run(std::promise<Status>& ready) {
    // libuv writes with write(2): a peer that hung up would raise SIGPIPE and kill
    // the whole process. Blocked on this thread, it stays pending and the write
    // fails with EPIPE instead, which closes just that connection.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    uv_loop_init(&loop);
    uv_async_init(&loop, &wake, [](uv_async_t* a) { static_cast<Impl*>(a->data)->drain_tasks(); });
    wake.data = this;
    Status status;
    for (size_t i = 0; i < configs.size() && status.ok(); ++i) {
      auto l = std::make_unique<Listener>(&loop, clock, configs[i], crash, [this, i](const ListenerStats& s) {
        std::lock_guard<std::mutex> lock(mu);
        board[i] = s;
        changed.notify_all();
      });
      status = l->listen();
      listeners.push_back(std::move(l));
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (status.ok()) {
        accepting = true;
      } else {
        stop_requested = true;
      }
    }
    if (!status.ok()) drain_tasks();
    ready.set_value(status);
    uv_run(&loop, UV_RUN_DEFAULT);
    // Shutdown: every job, connection and server handle is closed by now;
    // destroying the listeners closes their timers, which one more turn drains.
    listeners.clear();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
};

FakeRuntime::FakeRuntime(std::vector<ListenerConfig> listeners, CrashMode crash) : impl_(std::make_unique<Impl>()) {
  impl_->configs = std::move(listeners);
  impl_->crash = crash;
  impl_->board.resize(impl_->configs.size());
}

FakeRuntime::~FakeRuntime() { stop(); }

Status FakeRuntime::start() {
  if (impl_->started) return make_error("fake runtime already started");
  if (impl_->configs.empty()) return make_error("fake runtime needs at least one listener");
  impl_->started = true;
  std::promise<Status> ready;
  auto result = ready.get_future();
  impl_->thread = std::thread([this, &ready] { impl_->run(ready); });
  Status s = result.get();
  if (!s.ok()) stop();
  return s;
}

void FakeRuntime::stop() {
  if (!impl_->thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop_requested = true;
    if (impl_->accepting) uv_async_send(&impl_->wake);
  }
  impl_->thread.join();
}

size_t FakeRuntime::size() const { return impl_->configs.size(); }

int FakeRuntime::port(size_t listener) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->board.at(listener).port;  // published once at bind time
}

std::string FakeRuntime::base_url(size_t listener) const {
  const std::string& host = impl_->configs.at(listener).host;
  bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port(listener));
}

ListenerStats FakeRuntime::stats(size_t listener) const {
  // Asked on the loop thread, so the answer includes every event the loop has
  // finished handling, e.g. the one whose response the caller just read.
  auto answer = std::make_shared<std::promise<ListenerStats>>();
  auto result = answer->get_future();
  if (impl_->post([this, listener, answer] { answer->set_value(impl_->listeners.at(listener)->responder().stats()); }))
    return result.get();
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->board.at(listener);
}

bool FakeRuntime::wait_for(size_t listener, const std::function<bool(const ListenerStats&)>& pred,
                           std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->changed.wait_for(lock, timeout, [&] { return pred(impl_->board.at(listener)); });
}

void FakeRuntime::set_build(size_t listener, const std::string& build) {
  impl_->post([this, listener, build] { impl_->listeners.at(listener)->responder().set_build(build); });
}

void FakeRuntime::control(size_t listener, const std::string& json_body) {
  auto applied = std::make_shared<std::promise<void>>();
  auto done = applied->get_future();
  if (impl_->post([this, listener, json_body, applied] {
        impl_->listeners.at(listener)->responder().control(nlohmann::json::parse(json_body, nullptr, false));
        applied->set_value();
      }))
    done.wait();
}

void FakeRuntime::set_scenario(size_t listener, Scenario scenario) {
  impl_->post([this, listener, scenario] { impl_->listeners.at(listener)->responder().set_scenario(scenario); });
}

}  // namespace soak::fake
