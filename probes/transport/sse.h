// Incremental Server-Sent Events parser (the WHATWG "event stream" grammar).
//
// Bytes arrive in arbitrary pieces (a TCP read may end anywhere, even between
// the CR and LF of one line break); the parser keeps only the unfinished line
// and the fields of the event being built. Line breaks may be LF, CRLF or a
// lone CR; a UTF-8 BOM at the very start is dropped; `data:` lines are joined
// with "\n"; `field:value` loses one leading space; a line without a colon is
// a field with an empty value. Comment lines (`: ping`, `: keepalive`) are
// reported separately so a caller sees keep-alives without taking them for
// content.
//
// Ownership: the parser owns its buffers. The views passed to the sink point
// into them (or into the caller's input) and are valid only during the call.
// Threading: none; one parser per stream, used by one thread at a time.
// Failure: none. Any byte sequence is a valid input; what end of stream would
// discard (an unterminated line, an event without its closing blank line) is
// reported by tail(), never dispatched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace soak {

struct SseEvent {
  std::string_view type;            // `event:` value; empty if absent (the spec's default "message")
  std::string_view data;            // every `data:` value of the block, joined with "\n"
  std::string_view id;              // last event id in force (persists across events, per the spec)
  std::optional<int64_t> retry_ms;  // `retry:` given inside this block, if any
};

class SseSink {
 public:
  virtual ~SseSink() = default;
  virtual void on_event(const SseEvent& event) = 0;
  // `text` is the comment after the ':' with one leading space removed.
  virtual void on_comment(std::string_view text) = 0;
};

// What the end of the stream would throw away (the spec discards both).
struct SseTail {
  size_t partial_line_bytes = 0;    // bytes of a last line that never got its line break
  bool undispatched_event = false;  // data: lines seen but the closing blank line never came
  bool clean() const { return partial_line_bytes == 0 && !undispatched_event; }
};

class SseParser {
 public:
  // Parses `bytes`, calling `sink` for every event and comment they complete.
  void feed(std::string_view bytes, SseSink& sink);
  SseTail tail() const;
  void reset();

  int64_t events() const { return events_; }
  int64_t comments() const { return comments_; }

 private:
  void scan(std::string_view in, SseSink& sink);
  void line(std::string_view line, SseSink& sink);
  void dispatch(SseSink& sink);

  std::string partial_;  // an unfinished line carried over to the next feed()
  std::string data_;
  std::string type_;
  std::string id_;
  std::optional<int64_t> retry_ms_;
  bool has_data_ = false;
  bool skip_lf_ = false;  // the previous piece ended in CR: a leading LF belongs to it
  bool bom_checked_ = false;
  size_t bom_matched_ = 0;  // BOM bytes seen so far at stream start
  int64_t events_ = 0;
  int64_t comments_ = 0;
};

}  // namespace soak
