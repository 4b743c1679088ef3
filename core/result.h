// Result<T>: a value or an error message. Used wherever a call can fail in a way
// the caller must handle (parsing, I/O, store access). Nothing in soakd throws
// through a libuv or libcurl callback; failures travel as Result values.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace soak {

struct Error {
  std::string message;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

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

 private:
  std::optional<Error> err_;
};

}  // namespace soak
