#include "probes/transport/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/uv_util.h"
#include "probes/transport/curl_request.h"
#include "probes/transport/deadline.h"

namespace soak {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;

std::string describe_exception(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return std::string("handler threw: ") + ex.what();
  } catch (...) {
    return "handler threw a non-standard exception";
  }
}

}  // namespace

struct HttpClient::Impl {
  struct Socket {
    uv_poll_t poll;
    curl_socket_t fd;
    Impl* impl;
  };

  struct Transfer {
    Impl* impl = nullptr;
    TransferId id = kNoTransfer;
    TransferHandler* handler = nullptr;
    HttpRequest req;
    std::string origin;  // of req.url, for QueueRole::Slot
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    UvHandle<uv_timer_t> timer;  // wall + stall, re-armed lazily
    TransferResult result;
    StallMarks marks;        // start, last content, last prefill progress
    int pending_status = 0;  // status line seen, block not yet complete
    bool headers_done = false;
    // Held in the runtime's queue (marks.held_since_ns): on evidence (its own
    // requests in the slots, or a Busy reading), and whether for soakd's own requests.
    bool held_confirmed = false;
    bool held_by_own = false;
    bool in_multi = false;
    bool ended = false;
    char errbuf[CURL_ERROR_SIZE] = {};

    ~Transfer() {
      if (easy) curl_easy_cleanup(easy);
      curl_slist_free_all(headers);
    }
  };

  Impl(uv_loop_t* l, const Clock& c) : loop(l), clock(c) {
    global_init = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    multi = curl_multi_init();
    if (multi) {
      curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &Impl::on_socket);
      curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
      curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &Impl::on_curl_timer);
      curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
    }
    for (auto* t : {&curl_timer, &reaper, &read_timer}) {
      uv_timer_init(loop, t->get());
      t->mark_initialized();
      t->get()->data = this;
    }
  }

  ~Impl() {
    shutdown();
    if (global_init) curl_global_cleanup();
  }

  // ------------------------------------------------------------ lifecycle
  TransferId start(HttpRequest req, TransferHandler* handler) {
    if (shut || handler == nullptr) return kNoTransfer;
    auto owned = std::make_unique<Transfer>();
    Transfer* t = owned.get();
    t->impl = this;
    t->id = next_id++;
    t->handler = handler;
    t->req = std::move(req);
    if (t->req.queue_role == QueueRole::Slot) t->origin = origin_of(t->req.url);
    t->result.times.start_ns = clock.mono_ns();
    t->marks.start_ns = t->result.times.start_ns;
    uv_timer_init(loop, t->timer.get());
    t->timer.mark_initialized();
    t->timer.get()->data = t;
    transfers.emplace(t->id, std::move(owned));

    std::string err = configure(t);
    if (!err.empty()) {
      end(t, EndReason::Error, err, 0);
      schedule_reap();
      return t->id;
    }
    arm(t);
    if (t->ended) {
      schedule_reap();
      return t->id;
    }
    if (in_curl) {
      to_add.push_back(t);  // curl forbids adding handles from inside its callbacks
    } else {
      add(t);
    }
    return t->id;
  }

  void cancel(TransferId id) {
    auto it = transfers.find(id);
    if (it == transfers.end() || it->second->ended) return;
    end(it->second.get(), EndReason::Cancelled, "cancelled by the caller", 0);
    if (!in_curl) schedule_reap();  // inside curl, drive() retires it when curl returns
  }

  void mark_content(TransferId id, int64_t arrived_ns) {
    auto it = transfers.find(id);
    if (it == transfers.end() || it->second->ended) return;
    Transfer* t = it->second.get();
    t->marks.last_content_ns = arrived_ns;
    served(*t, arrived_ns);
    if (t->marks.held_since_ns) leave(t, arrived_ns);
  }

  void mark_progress(TransferId id, int64_t arrived_ns) {
    auto it = transfers.find(id);
    if (it == transfers.end() || it->second->ended) return;
    Transfer* t = it->second.get();
    StallMarks& m = t->marks;
    if (!m.last_content_ns) m.last_progress_ns = arrived_ns;  // after the first content only content counts
    served(*t, arrived_ns);
    if (m.held_since_ns) leave(t, arrived_ns);
  }

  // Every slot request to `origin` still waiting for its first content may
  // be the one the runtime starts next: the queue moved for it (its owner's
  // requests are being served), and one held there leaves the queue.
  void mark_queue_moved(std::string_view origin, int64_t at_ns) {
    for (auto& [id, t] : transfers) {
      if (!waiting_in(*t, origin)) continue;
      t->marks.queue_moved_ns = std::max(t->marks.queue_moved_ns.value_or(at_ns), at_ns);
      served(*t, at_ns);
      if (t->marks.held_since_ns) leave(t.get(), at_ns);
    }
  }

  // ------------------------------------------------------------ the runtime's queue
  void served(const Transfer& t, int64_t at_ns) {
    if (t.req.queue_role != QueueRole::Slot || t.req.owner.empty()) return;
    int64_t& last = last_served[t.req.owner];
    last = std::max(last, at_ns);
  }

  // soakd's other slot requests to the same origin in flight that a slot took
  // (a first byte came: llama-server writes nothing to one it has queued).
  // Those without a byte are not counted: they may be queued, or stuck
  // themselves, and a runtime whose every request is stuck must stall.
  int64_t in_slots(const Transfer& t) const {
    int64_t n = 0;
    for (const auto& [id, u] : transfers)
      if (u.get() != &t && !u->ended && u->req.queue_role == QueueRole::Slot && u->origin == t.origin &&
          u->result.times.first_byte_ns)
        ++n;
    return n;
  }

  // Its budget spent before its first byte: held in the queue, or stalled.
  // True when it is held.
  bool hold_if_queued(Transfer* t, int64_t now) {
    if (t->req.queue_role != QueueRole::Slot || t->marks.last_content_ns) return false;
    QueueSignals sig;
    sig.first_byte = t->result.bytes_received > 0;
    sig.in_slots = in_slots(*t);
    sig.slots = t->req.runtime_slots;
    sig.can_read = readers.count(t->origin) > 0;
    const BudgetSpent call = on_budget_spent(sig);
    if (call == BudgetSpent::Stalled) return false;
    t->marks.held_since_ns = now;
    t->held_confirmed = t->held_by_own = call == BudgetSpent::Queued;
    if (!t->result.queue.first_held_ns) t->result.queue.first_held_ns = now;
    if (call == BudgetSpent::Queued)
      t->result.queue.why = std::to_string(sig.in_slots) + " of soakd's own requests in its " +
                            std::to_string(*sig.slots) + " slot" + (*sig.slots == 1 ? "" : "s");
    ask_reader(t->origin);
    return true;
  }

  // It can have left the queue at `at`: its budget runs again from then.
  void leave(Transfer* t, int64_t at) {
    if (!t->marks.held_since_ns || t->ended) return;
    t->marks.held_since_ns.reset();
    t->held_confirmed = t->held_by_own = false;
    t->marks.queue_moved_ns = std::max(t->marks.queue_moved_ns.value_or(at), at);
    t->result.queue.left_ns = at;
    arm(t);
    if (t->ended && !in_curl) schedule_reap();  // inside curl, drive() retires it when curl returns
  }

  void ask_reader(const std::string& origin) {
    if (shut || !readers.count(origin)) return;
    reads_due.insert(origin);
    uv_timer_start(read_timer.get(), &Impl::on_read_timer, 0, 0);  // never inside a caller's own call
  }

  void set_queue_reader(std::string_view origin, QueueReader* reader) {
    if (reader)
      readers[std::string(origin)] = reader;
    else
      readers.erase(std::string(origin));
  }

  void report_queue(std::string_view origin, QueueState state, bool moved, int64_t at, std::string why) {
    if (shut) return;
    if (moved) mark_queue_moved(origin, at);
    bool ended_any = false;
    for (auto& [id, t] : transfers) {
      Transfer* x = t.get();
      if (x->ended || x->origin != origin || !x->marks.held_since_ns) continue;
      switch (on_queue_reading(x->held_confirmed, state)) {
        case HeldCall::Stay:
          if (state == QueueState::Busy) {
            x->held_confirmed = true;
            if (!why.empty()) x->result.queue.why = why;
          }
          break;
        case HeldCall::Leave: leave(x, at); break;
        case HeldCall::Stall: {
          // Held only until this reading: its budget is spent, and the runtime is not busy.
          x->marks.held_since_ns.reset();
          std::string detail = describe_limit(EndReason::Stalled, x->req, x->marks);
          detail += state == QueueState::Free ? "; the runtime's queue was not busy"
                                              : "; the runtime's queue could not be read";
          if (!why.empty()) detail += " (" + why + ")";
          end(x, EndReason::Stalled, std::move(detail), 0);
          ended_any = true;
          break;
        }
      }
    }
    if (ended_any) schedule_reap();
  }

  size_t held(std::string_view origin) const {
    size_t n = 0;
    for (const auto& [id, t] : transfers) n += !t->ended && t->origin == origin && t->marks.held_since_ns ? 1 : 0;
    return n;
  }

  ServingStats serving(std::string_view owner) const {
    ServingStats s;
    for (const auto& [id, t] : transfers) {
      if (t->ended || t->req.queue_role != QueueRole::Slot || t->req.owner != owner) continue;
      ++s.outstanding;
      if (t->marks.held_since_ns) ++s.held;
      if (!s.oldest_start_ns || t->marks.start_ns < *s.oldest_start_ns) s.oldest_start_ns = t->marks.start_ns;
      s.silent_budget_ms = std::max(s.silent_budget_ms, t->req.stall_timeout_ms + t->req.prefill_allowance_ms);
    }
    if (auto it = last_served.find(std::string(owner)); it != last_served.end()) s.last_served_ns = it->second;
    return s;
  }

  static void on_read_timer(uv_timer_t* h) {
    auto* m = static_cast<Impl*>(h->data);
    std::set<std::string> due;
    due.swap(m->reads_due);
    for (const auto& origin : due)
      if (auto it = m->readers.find(origin); it != m->readers.end() && !m->shut) it->second->read();
  }

  static bool waiting_in(const Transfer& t, std::string_view origin) {
    return !t.ended && t.req.queue_role == QueueRole::Slot && t.origin == origin && !t.marks.last_content_ns;
  }

  size_t queued(std::string_view origin) const {
    size_t n = 0;
    for (const auto& [id, t] : transfers) n += waiting_in(*t, origin) ? 1 : 0;
    return n;
  }

  void shutdown() {
    if (shut) return;
    if (in_curl) {
      shutdown_pending = true;  // curl_multi_cleanup must not run inside curl; drive() finishes this
      return;
    }
    shut = true;
    uv_timer_stop(curl_timer.get());
    uv_timer_stop(reaper.get());
    uv_timer_stop(read_timer.get());
    reads_due.clear();
    for (auto& [id, t] : transfers) end(t.get(), EndReason::Cancelled, "client shut down", 0);
    to_add.clear();
    retire_all();
    if (multi) {
      curl_multi_cleanup(multi);  // closes cached connections (socket callbacks close their polls)
      multi = nullptr;
    }
    std::vector<Socket*> left(sockets.begin(), sockets.end());
    for (Socket* s : left) close_socket(s);
    curl_timer.close();
    reaper.close();
    read_timer.close();
  }

  // ------------------------------------------------------------ setup
  std::string configure(Transfer* t) {
    if (!multi) return "curl_multi_init failed";
    CURL* e = curl_easy_init();
    if (!e) return "curl_easy_init failed";
    t->easy = e;
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    t->headers = set_request_options(e, t->req);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Impl::on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Impl::on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, &Impl::on_sockopt);
    curl_easy_setopt(e, CURLOPT_SOCKOPTDATA, t);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, &Impl::on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, t);
    return {};
  }

  void add(Transfer* t) {
    CURLMcode rc = curl_multi_add_handle(multi, t->easy);
    if (rc != CURLM_OK) {
      end(t, EndReason::Error, std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc), 0);
      schedule_reap();
      return;
    }
    t->in_multi = true;
  }

  // ------------------------------------------------------------ limits
  void arm(Transfer* t) {
    int64_t now = clock.mono_ns();
    const HttpRequest& r = t->req;
    TransferLimits limits{r.wall_timeout_ms * kNsPerMs, r.stall_timeout_ms * kNsPerMs,
                          r.prefill_allowance_ms * kNsPerMs, std::nullopt};
    if (r.moved_prefill_allowance_ms) limits.moved_prefill_ns = *r.moved_prefill_allowance_ms * kNsPerMs;
    auto check = check_deadlines(t->marks, limits, now);
    // Queued is not hung: a budget spent before the first byte while the
    // runtime is busy holds the request in its queue (deadline.h).
    if (check.tripped == EndReason::Stalled && hold_if_queued(t, now)) check = check_deadlines(t->marks, limits, now);
    if (check.tripped) {
      end(t, *check.tripped, describe_limit(*check.tripped, r, t->marks, t->result.queue.why), 0);
      return;
    }
    if (check.next_ns) uv_timer_start(t->timer.get(), &Impl::on_transfer_timer, timer_ms_for(*check.next_ns - now), 0);
  }

  // The runtime wrote its first byte: a slot took the request (llama-server
  // writes nothing to one waiting in its queue).
  void first_byte(Transfer* t, int64_t now) {
    served(*t, now);
    if (t->marks.held_since_ns) leave(t, now);
  }

  // ------------------------------------------------------------ ending
  // Decides the end of a transfer once; delivery waits for retire_all().
  void end(Transfer* t, EndReason reason, std::string detail, int curl_code) {
    if (t->ended) return;
    t->ended = true;
    t->result.reason = reason;
    t->result.detail = std::move(detail);
    t->result.curl_code = curl_code;
    t->result.times.done_ns = clock.mono_ns();
    uv_timer_stop(t->timer.get());
    ended.push_back(t);
    // A slot request the runtime served (it wrote content, or a whole answer)
    // freed its slot: whatever waits behind it at that origin is queued, not
    // stalled, whoever sent it. One cut while nothing came moved nothing.
    const bool was_served = t->marks.last_content_ns.has_value() || reason == EndReason::Completed;
    if (t->req.queue_role != QueueRole::Slot) return;
    if (reason == EndReason::Completed && t->result.head.status > 0) served(*t, t->result.times.done_ns);
    if (was_served) mark_queue_moved(t->origin, t->result.times.done_ns);
    // Requests held behind soakd's own that no longer fill the slots: their
    // budget runs again from now (the runtime's reader may hold them again).
    for (auto& [id, u] : transfers) {
      Transfer* h = u.get();
      if (h->ended || h->origin != t->origin || !h->held_by_own || !h->req.runtime_slots) continue;
      if (in_slots(*h) < *h->req.runtime_slots) leave(h, t->result.times.done_ns);
    }
  }

  void schedule_reap() {
    if (!shut) uv_timer_start(reaper.get(), &Impl::on_reaper, 0, 0);
  }

  // Removes ended transfers from curl and delivers on_done. Never runs inside curl.
  void retire_all() {
    if (retiring) return;
    retiring = true;
    while (!ended.empty()) {
      Transfer* t = ended.front();
      ended.pop_front();
      if (t->in_multi && multi) {
        curl_multi_remove_handle(multi, t->easy);  // an unfinished transfer's connection is closed here
        t->in_multi = false;
      }
      long connects = 0;
      if (t->easy && curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK) {
        t->result.reused_connection = t->result.times.connected_ns.has_value() && connects == 0;
      }
      auto it = transfers.find(t->id);
      std::unique_ptr<Transfer> owned = std::move(it->second);
      transfers.erase(it);
      try {
        owned->handler->on_done(owned->id, owned->result);
      } catch (...) {
        // The transfer is over; there is nothing left to end. Swallowed so it cannot unwind through libuv.
      }
    }
    retiring = false;
  }

  // ------------------------------------------------------------ driving curl
  void drive(curl_socket_t fd, int flags) {
    int running = 0;
    in_curl = true;
    curl_multi_socket_action(multi, fd, flags, &running);
    in_curl = false;
    if (shutdown_pending) {
      shutdown();
      return;
    }
    collect_finished();
    std::vector<Transfer*> adds;
    adds.swap(to_add);
    for (Transfer* t : adds) {
      if (!t->ended) add(t);
    }
    retire_all();
  }

  void collect_finished() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      if (t == nullptr || t->ended) continue;  // we decided first (cancel, size cap, handler error)
      CURLcode code = msg->data.result;
      curl_off_t connect_us = 0;
      curl_easy_getinfo(t->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
      bool connected = t->result.times.connected_ns.has_value() || connect_us > 0;
      std::string detail;
      if (code != CURLE_OK) detail = t->errbuf[0] ? std::string(t->errbuf) : std::string(curl_easy_strerror(code));
      end(t, end_reason_for_curl(code, connected), std::move(detail), static_cast<int>(code));
    }
  }

  void close_socket(Socket* s) {
    sockets.erase(s);
    uv_poll_stop(&s->poll);
    uv_close(reinterpret_cast<uv_handle_t*>(&s->poll), [](uv_handle_t* h) { delete static_cast<Socket*>(h->data); });
  }

  // ------------------------------------------------------------ C callbacks
  static int on_socket(CURL*, curl_socket_t fd, int what, void* userp, void* socketp) {
    auto* m = static_cast<Impl*>(userp);
    auto* s = static_cast<Socket*>(socketp);
    if (what == CURL_POLL_REMOVE) {
      if (s) m->close_socket(s);  // curl drops its own record of the socket after this call
      return 0;
    }
    if (!s) {
      s = new Socket{};
      s->fd = fd;
      s->impl = m;
      if (uv_poll_init_socket(m->loop, &s->poll, fd) != 0) {
        delete s;
        return -1;
      }
      s->poll.data = s;
      m->sockets.insert(s);
      curl_multi_assign(m->multi, fd, s);
    }
    int events = 0;
    if (what & CURL_POLL_IN) events |= UV_READABLE;
    if (what & CURL_POLL_OUT) events |= UV_WRITABLE;
    uv_poll_start(&s->poll, events, &Impl::on_poll);
    return 0;
  }

  static void on_poll(uv_poll_t* h, int status, int events) {
    auto* s = static_cast<Socket*>(h->data);
    int flags = 0;
    if (status < 0) {
      // libuv reports EPOLLERR (e.g. a reset keep-alive connection) as an error
      // status. CURL_CSELECT_ERR would fail the transfer with "select/poll
      // returned error" before curl reads the socket; letting curl read and
      // write finds the real error and lets it retry a dead reused connection.
      flags = CURL_CSELECT_IN | CURL_CSELECT_OUT;
    } else {
      if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
      if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    }
    s->impl->drive(s->fd, flags);  // `s` may be freed by now
  }

  static int on_curl_timer(CURLM*, long timeout_ms, void* userp) {
    auto* m = static_cast<Impl*>(userp);
    if (timeout_ms < 0) {
      uv_timer_stop(m->curl_timer.get());
    } else {
      uv_timer_start(m->curl_timer.get(), &Impl::on_curl_timeout, static_cast<uint64_t>(timeout_ms), 0);
    }
    return 0;
  }

  static void on_curl_timeout(uv_timer_t* h) { static_cast<Impl*>(h->data)->drive(CURL_SOCKET_TIMEOUT, 0); }

  static void on_reaper(uv_timer_t* h) { static_cast<Impl*>(h->data)->retire_all(); }

  static void on_transfer_timer(uv_timer_t* h) {
    auto* t = static_cast<Transfer*>(h->data);
    if (t->ended) return;
    Impl* m = t->impl;
    m->arm(t);  // ends the transfer if a limit passed, else re-arms for the next deadline
    if (t->ended) m->retire_all();
  }

  static int on_sockopt(void* userp, curl_socket_t, curlsocktype) {
    auto* t = static_cast<Transfer*>(userp);
    t->result.times.connect_start_ns = t->impl->clock.mono_ns();
    return CURL_SOCKOPT_OK;
  }

  static int on_prereq(void* userp, char*, char*, int, int local_port) {
    auto* t = static_cast<Transfer*>(userp);
    t->result.times.connected_ns = t->impl->clock.mono_ns();
    t->result.local_port = local_port;
    return CURL_PREREQFUNC_OK;
  }

  static size_t on_header(char* buf, size_t size, size_t n, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    size_t len = size * n;
    if (t->ended || t->impl->shutdown_pending) return 0;
    try {
      int64_t now = t->impl->clock.mono_ns();
      if (!t->result.times.first_byte_ns) {
        t->result.times.first_byte_ns = now;
        t->impl->first_byte(t, now);
      }
      if (t->headers_done) return len;  // chunked trailers
      std::string_view line = trim_header_line(std::string_view(buf, len));
      if (line.rfind("HTTP/", 0) == 0) {
        t->pending_status = parse_status_line(line);
        t->result.head.headers.clear();  // a new block (after a 1xx) replaces the old one
        return len;
      }
      if (line.empty()) {
        if (t->pending_status >= 200) {
          t->headers_done = true;
          t->result.head.status = t->pending_status;
          t->handler->on_headers(t->id, t->result.head, now);
        }
        return t->ended ? 0 : len;
      }
      size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        t->result.head.headers.push_back(
            HttpHeader{std::string(line.substr(0, colon)), std::string(trim_header_line(line.substr(colon + 1)))});
      }
      return len;
    } catch (...) {
      t->impl->end(t, EndReason::Error, describe_exception(std::current_exception()), 0);
      return 0;
    }
  }

  static size_t on_write(char* buf, size_t size, size_t n, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    size_t len = size * n;
    if (t->ended || t->impl->shutdown_pending) return 0;  // cancelled from a handler: make curl stop reading
    try {
      int64_t now = t->impl->clock.mono_ns();
      if (!t->result.times.first_byte_ns) {
        t->result.times.first_byte_ns = now;
        t->impl->first_byte(t, now);
      }
      if (t->marks.held_since_ns) t->impl->leave(t, now);  // a body byte: a slot took it
      size_t take = len;
      bool over = false;
      const int64_t cap = t->req.max_response_bytes;
      if (cap > 0 && t->result.bytes_received + static_cast<int64_t>(len) > cap) {
        take = static_cast<size_t>(cap - t->result.bytes_received);
        over = true;
      }
      t->result.bytes_received += static_cast<int64_t>(take);
      if (take > 0) {
        if (t->req.body_mode == BodyMode::Buffer) {
          t->result.body.append(buf, take);
          t->marks.last_content_ns = now;
          t->impl->served(*t, now);
        } else {
          t->handler->on_body(t->id, std::string_view(buf, take), now);
        }
      }
      if (over) {
        t->impl->end(t, EndReason::Truncated, "response body reached the cap of " + std::to_string(cap) + " bytes", 0);
        return 0;
      }
      return t->ended ? 0 : len;
    } catch (...) {
      t->impl->end(t, EndReason::Error, describe_exception(std::current_exception()), 0);
      return 0;
    }
  }

  uv_loop_t* loop;
  const Clock& clock;
  CURLM* multi = nullptr;
  UvHandle<uv_timer_t> curl_timer;
  UvHandle<uv_timer_t> reaper;      // delivers ends decided outside any loop callback
  UvHandle<uv_timer_t> read_timer;  // asks the queue readers of reads_due, on the next loop pass
  std::set<std::string> reads_due;
  std::unordered_map<std::string, QueueReader*> readers;  // by origin (borrowed)
  std::unordered_map<std::string, int64_t> last_served;   // by owner: ServingStats::last_served_ns
  std::unordered_map<TransferId, std::unique_ptr<Transfer>> transfers;
  std::vector<Transfer*> to_add;  // started from inside a curl callback
  std::deque<Transfer*> ended;    // decided, not yet delivered
  std::unordered_set<Socket*> sockets;
  TransferId next_id = 1;
  bool in_curl = false;
  bool retiring = false;
  bool shut = false;
  bool shutdown_pending = false;  // shutdown() was called from inside a curl callback
  bool global_init = false;
};

HttpClient::HttpClient(uv_loop_t* loop, const Clock& clock) : impl_(std::make_unique<Impl>(loop, clock)) {}
HttpClient::~HttpClient() = default;

TransferId HttpClient::start(HttpRequest request, TransferHandler* handler) {
  return impl_->start(std::move(request), handler);
}
void HttpClient::cancel(TransferId id) { impl_->cancel(id); }
void HttpClient::mark_content(TransferId id, int64_t arrived_mono_ns) { impl_->mark_content(id, arrived_mono_ns); }
void HttpClient::mark_progress(TransferId id, int64_t arrived_mono_ns) { impl_->mark_progress(id, arrived_mono_ns); }
void HttpClient::mark_queue_moved(std::string_view origin, int64_t at_mono_ns) {
  impl_->mark_queue_moved(origin, at_mono_ns);
}
size_t HttpClient::queued(std::string_view origin) const { return impl_->queued(origin); }
void HttpClient::set_queue_reader(std::string_view origin, QueueReader* reader) {
  impl_->set_queue_reader(origin, reader);
}
void HttpClient::report_queue(std::string_view origin, QueueState state, bool moved, int64_t at_mono_ns,
                              std::string why) {
  impl_->report_queue(origin, state, moved, at_mono_ns, std::move(why));
}
size_t HttpClient::held(std::string_view origin) const { return impl_->held(origin); }
ServingStats HttpClient::serving(std::string_view owner) const { return impl_->serving(owner); }
void HttpClient::shutdown() { impl_->shutdown(); }
size_t HttpClient::active() const { return impl_->transfers.size(); }

}  // namespace soak
