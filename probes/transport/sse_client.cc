#include "probes/transport/sse_client.h"

#include <string>
#include <utility>

namespace soak {
namespace {

constexpr std::string_view kEventStream = "text/event-stream";

bool is_event_stream(const ResponseHead& head) {
  const std::string* ct = head.find("Content-Type");
  if (ct == nullptr) return false;
  std::string_view v = *ct;
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v.size() >= kEventStream.size() && header_name_equals(v.substr(0, kEventStream.size()), kEventStream);
}

}  // namespace

class SseClient::Stream final : public TransferHandler, private SseSink {
 public:
  Stream(SseClient& owner, SseHandler* handler) : owner_(owner), handler_(handler) {}

  void on_headers(TransferId id, const ResponseHead& head, int64_t mono_ns) override {
    event_stream_ = is_event_stream(head);
    handler_->on_headers(id, head, mono_ns);
  }

  void on_body(TransferId id, std::string_view bytes, int64_t mono_ns) override {
    if (cancelled_) return;
    if (!event_stream_) {
      other_body_.append(bytes);
      return;
    }
    id_ = id;
    now_ = mono_ns;
    parser_.feed(bytes, *this);
    // One stall-clock mark per chunk: every event in it shares the stamp.
    if (progress_in_chunk_) {
      progress_in_chunk_ = false;
      owner_.http_.mark_progress(id, mono_ns);
    }
    if (content_in_chunk_) {
      content_in_chunk_ = false;
      owner_.http_.mark_content(id, mono_ns);
    }
  }

  void on_done(TransferId id, const TransferResult& transfer) override {
    SseResult out;
    out.transfer = transfer;
    if (!event_stream_) out.transfer.body = std::move(other_body_);
    out.event_stream = event_stream_;
    out.events = events_;
    out.comments = comments_;
    out.first_event_ns = first_event_ns_;
    out.tail = parser_.tail();
    SseHandler* handler = handler_;
    std::unique_ptr<Stream> self = owner_.release(id);  // `this` is freed when `self` goes out of scope
    handler->on_done(id, out);
  }

  void cancel() { cancelled_ = true; }

 private:
  void on_event(const SseEvent& event) override {
    if (cancelled_) return;
    ++events_;
    if (!first_event_ns_) first_event_ns_ = now_;
    note(handler_->on_event(id_, event, now_));
  }

  void on_comment(std::string_view text) override {
    if (cancelled_) return;
    ++comments_;
    note(handler_->on_comment(id_, text, now_));
  }

  void note(EventClass c) {
    if (c == EventClass::Content) content_in_chunk_ = true;
    if (c == EventClass::Progress) progress_in_chunk_ = true;
  }

  SseClient& owner_;
  SseHandler* handler_;
  SseParser parser_;
  std::string other_body_;
  std::optional<int64_t> first_event_ns_;
  TransferId id_ = kNoTransfer;
  int64_t now_ = 0;
  int64_t events_ = 0;  // delivered to the handler
  int64_t comments_ = 0;
  bool event_stream_ = false;
  bool cancelled_ = false;
  bool content_in_chunk_ = false;   // a content event in the chunk being fed
  bool progress_in_chunk_ = false;  // a prefill progress report in the chunk being fed
};

SseClient::SseClient(HttpClient& http) : http_(http) {}
SseClient::~SseClient() = default;

TransferId SseClient::start(HttpRequest request, SseHandler* handler) {
  if (handler == nullptr) return kNoTransfer;
  request.body_mode = BodyMode::Stream;
  bool has_accept = false;
  for (const auto& h : request.headers) has_accept = has_accept || header_name_equals(h.name, "Accept");
  if (!has_accept) request.headers.push_back(HttpHeader{"Accept", std::string(kEventStream)});
  auto stream = std::make_unique<Stream>(*this, handler);
  TransferId id = http_.start(std::move(request), stream.get());
  if (id != kNoTransfer) streams_.emplace(id, std::move(stream));
  return id;
}

void SseClient::cancel(TransferId id) {
  auto it = streams_.find(id);
  if (it != streams_.end()) it->second->cancel();
  http_.cancel(id);
}

std::unique_ptr<SseClient::Stream> SseClient::release(TransferId id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return nullptr;
  auto s = std::move(it->second);
  streams_.erase(it);
  return s;
}

}  // namespace soak
