// Result<T>: a value or an error. Used wherever a call can fail in a way the
// caller must handle (parsing, I/O, store access). Nothing in soakd throws
// through a libuv or libcurl callback; failures travel as Result values.
//
// An Error is its text (what the operator reads) and a code (what a caller
// decides by). Most errors are only read, and make_error(text) leaves the code
// Unspecified; the store's errors carry the code of the SQLite call that failed
// (storage/sqlite_stmt.h sqlite_error), so that which failures pass is decided
// by the code, never by searching the text (storage/write_fault.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace soak {

enum class ErrorCode {
  Unspecified,      // no code: the text is all there is (the default)
  StoreFull,        // SQLITE_FULL: the disk (or the store's size limit) is full
  StoreBusy,        // SQLITE_BUSY, SQLITE_LOCKED: another connection holds the lock past the busy timeout
  StoreReadOnly,    // SQLITE_READONLY: the file, or the file system, is read-only
  StoreIo,          // SQLITE_IOERR: the OS failed a read or a write (ENOSPC on some writes, EIO)
  StoreCantOpen,    // SQLITE_CANTOPEN: the file, or its journal or WAL file, cannot be opened or made
  StoreConstraint,  // SQLITE_CONSTRAINT: a row the schema refuses (NOT NULL, CHECK, foreign key, unique)
  StoreOther,       // any other SQLite failure (corrupt or foreign file, misuse, out of memory, ...)
};

struct Error {
  std::string message;
  ErrorCode code = ErrorCode::Unspecified;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }
inline Error make_error(ErrorCode code, std::string message) { return Error{std::move(message), code}; }
// "<what>: <e's text>" with e's code: an error passed up with where it happened.
inline Error error_in(std::string_view what, const Error& e) {
  std::string m(what);
  m.append(": ").append(e.message);
  return Error{std::move(m), e.code};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  // By value on temporaries, so `for (auto& x : *store.rows())` does not dangle.
  T operator*() && { return std::move(value()); }

  const Error& error() const { return std::get<1>(v_); }
  const std::string& message() const { return error().message; }
  ErrorCode code() const { return error().code; }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : err_(std::move(error)) {}  // NOLINT: implicit by design
  static Status Ok() { return Status(); }

  bool ok() const { return !err_.has_value(); }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return err_->message; }
  const Error& error() const { return *err_; }
  ErrorCode code() const { return err_->code; }

 private:
  std::optional<Error> err_;
};

}  // namespace soak

// The early return, in a function returning Status or any Result<U>:
//   SOAK_TRY(store.update_stage(row));                   // a Status, or a Result whose value is not needed
//   SOAK_TRY_ASSIGN(auto rows, store.probe_results(q));  // declares rows, the value (here a vector)
//   SOAK_TRY_ASSIGN(in.events, store.events(q));         // or moves the value into an existing lvalue
// Each evaluates the expression once and, when it failed, returns its Error as
// it is (code and text); an error that gets a word added, or is logged, is
// written out instead. SOAK_TRY_ASSIGN expands to several statements: never the
// body of an unbraced if or for, and at most one per line.
#define SOAK_TRY(...)                                                         \
  do {                                                                        \
    if (auto soak_try_ = (__VA_ARGS__); !soak_try_) return soak_try_.error(); \
  } while (0)

#define SOAK_TRY_ASSIGN(lhs, ...) SOAK_TRY_ASSIGN_(SOAK_TRY_NAME_(__LINE__), lhs, __VA_ARGS__)
#define SOAK_TRY_ASSIGN_(tmp, lhs, ...) \
  auto tmp = (__VA_ARGS__);             \
  if (!tmp) return tmp.error();         \
  lhs = std::move(tmp).value()
#define SOAK_TRY_NAME_(line) SOAK_TRY_CAT_(soak_try_, line)
#define SOAK_TRY_CAT_(a, b) a##b
