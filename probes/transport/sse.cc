#include "probes/transport/sse.h"

#include <cstring>

namespace soak {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr size_t kMaxRetryDigits = 15;  // beyond any sane reconnection delay; keeps int64 safe

const char* find_byte(const char* p, const char* end, char c) {
  return static_cast<const char*>(std::memchr(p, c, static_cast<size_t>(end - p)));
}

std::optional<int64_t> parse_retry(std::string_view v) {
  if (v.empty() || v.size() > kMaxRetryDigits) return std::nullopt;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

void SseParser::feed(std::string_view in, SseSink& sink) {
  if (!bom_checked_) {
    // The BOM itself may arrive split across pieces; hold its prefix until decided.
    size_t i = 0;
    while (i < in.size() && bom_matched_ < kBom.size() && in[i] == kBom[bom_matched_]) {
      ++i;
      ++bom_matched_;
    }
    if (bom_matched_ == kBom.size()) {
      bom_checked_ = true;
    } else if (i < in.size()) {
      bom_checked_ = true;  // not a BOM: the bytes held back were ordinary line content
      partial_.append(kBom.substr(0, bom_matched_));
    } else {
      return;  // still a BOM prefix
    }
    in.remove_prefix(i);
  }
  scan(in, sink);
}

void SseParser::scan(std::string_view in, SseSink& sink) {
  const char* p = in.data();
  const char* const end = p + in.size();
  if (p == end) return;
  if (skip_lf_) {
    skip_lf_ = false;
    if (*p == '\n') ++p;
  }
  // CR is rare (SSE servers send LF or CRLF), so its next position is found
  // once and reused until passed; LF is then searched only up to it.
  const char* next_cr = nullptr;
  while (p < end) {
    if (next_cr == nullptr || next_cr < p) {
      next_cr = find_byte(p, end, '\r');
      if (next_cr == nullptr) next_cr = end;
    }
    const char* brk = find_byte(p, next_cr, '\n');
    const char* after;
    if (brk != nullptr) {
      after = brk + 1;
    } else if (next_cr < end) {
      brk = next_cr;
      after = brk + 1;
      if (after == end) {
        skip_lf_ = true;
      } else if (*after == '\n') {
        ++after;
      }
    } else {
      partial_.append(p, static_cast<size_t>(end - p));
      return;
    }
    if (partial_.empty()) {
      line(std::string_view(p, static_cast<size_t>(brk - p)), sink);
    } else {
      partial_.append(p, static_cast<size_t>(brk - p));
      line(partial_, sink);
      partial_.clear();
    }
    p = after;
  }
}

void SseParser::line(std::string_view ln, SseSink& sink) {
  if (ln.empty()) {
    dispatch(sink);
    return;
  }
  if (ln[0] == ':') {
    ln.remove_prefix(1);
    if (!ln.empty() && ln[0] == ' ') ln.remove_prefix(1);
    ++comments_;
    sink.on_comment(ln);
    return;
  }
  std::string_view field = ln;
  std::string_view value;
  if (const void* colon = std::memchr(ln.data(), ':', ln.size())) {
    size_t at = static_cast<size_t>(static_cast<const char*>(colon) - ln.data());
    field = ln.substr(0, at);
    value = ln.substr(at + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    type_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
  } else if (field == "retry") {
    if (auto r = parse_retry(value)) retry_ms_ = r;
  }
  // Any other field name is ignored, as the spec requires.
}

void SseParser::dispatch(SseSink& sink) {
  if (has_data_) {
    ++events_;
    sink.on_event(SseEvent{type_, data_, id_, retry_ms_});
  }
  data_.clear();
  type_.clear();
  retry_ms_.reset();
  has_data_ = false;
}

SseTail SseParser::tail() const {
  SseTail t;
  t.partial_line_bytes = partial_.size() + (bom_checked_ ? 0 : bom_matched_);
  t.undispatched_event = has_data_;
  return t;
}

void SseParser::reset() { *this = SseParser(); }

}  // namespace soak
