// core/result.h: an Error's code travels with its text; SOAK_TRY and
// SOAK_TRY_ASSIGN return a failure as it is, evaluate their expression once,
// and go on with the value when it did not fail.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "tests/catch.h"

using namespace soak;

namespace {

int calls = 0;

Status fails_with(ErrorCode code) {
  ++calls;
  return make_error(code, "it failed");
}
Status passes() {
  ++calls;
  return {};
}
Result<int> number(std::optional<int> n) {
  ++calls;
  if (!n) return make_error(ErrorCode::StoreBusy, "no number");
  return *n;
}

Status two_steps(bool first_fails, std::vector<std::string>& done) {
  SOAK_TRY(first_fails ? fails_with(ErrorCode::StoreFull) : passes());
  done.push_back("first");
  SOAK_TRY(number(std::nullopt));  // a Result whose value is not needed
  done.push_back("second");
  return {};
}

Result<std::string> doubled(std::optional<int> n) {
  SOAK_TRY_ASSIGN(const int v, number(n));
  SOAK_TRY(passes());  // a Status in a function returning a Result
  return std::to_string(2 * v);
}

struct Sum {
  int total = 0;
};
Result<Sum> sum(std::optional<int> a, std::optional<int> b) {
  Sum s;
  SOAK_TRY_ASSIGN(s.total, number(a));  // into an existing lvalue
  SOAK_TRY_ASSIGN(const int more, number(b));
  s.total += more;
  return s;
}

Result<std::unique_ptr<int>> boxed(int v) { return std::make_unique<int>(v); }
Result<int> unboxed(int v) {
  SOAK_TRY_ASSIGN(auto p, boxed(v));  // a move-only value is moved out
  return *p;
}

}  // namespace

TEST_CASE("an error carries a code; make_error(text) leaves it unspecified") {
  const Error plain = make_error("x");
  CHECK(plain.message == "x");
  CHECK(plain.code == ErrorCode::Unspecified);
  const Error coded = make_error(ErrorCode::StoreReadOnly, "y");
  CHECK(coded.code == ErrorCode::StoreReadOnly);
  CHECK(Error{"z"}.code == ErrorCode::Unspecified);  // still an aggregate
  const Error in = error_in("insert event", coded);
  CHECK(in.message == "insert event: y");
  CHECK(in.code == ErrorCode::StoreReadOnly);
  const Status st = coded;
  CHECK(st.code() == ErrorCode::StoreReadOnly);
  const Result<int> r = coded;
  CHECK(r.code() == ErrorCode::StoreReadOnly);
  CHECK(r.message() == "y");
}

TEST_CASE("SOAK_TRY returns the first failure as it is and evaluates its expression once") {
  std::vector<std::string> done;
  calls = 0;
  Status st = two_steps(true, done);
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == ErrorCode::StoreFull);
  CHECK(st.message() == "it failed");
  CHECK(done.empty());
  CHECK(calls == 1);

  calls = 0;
  st = two_steps(false, done);
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == ErrorCode::StoreBusy);  // the Result's error, returned from a Status function
  CHECK(st.message() == "no number");
  CHECK(done == std::vector<std::string>{"first"});
  CHECK(calls == 2);
}

TEST_CASE("SOAK_TRY_ASSIGN declares or assigns the value, or returns the error") {
  calls = 0;
  auto d = doubled(21);
  REQUIRE(d.ok());
  CHECK(*d == "42");
  CHECK(calls == 2);  // number once, passes once

  calls = 0;
  auto none = doubled(std::nullopt);
  REQUIRE_FALSE(none.ok());
  CHECK(none.code() == ErrorCode::StoreBusy);
  CHECK(calls == 1);  // nothing after the failure ran

  auto s = sum(2, 3);
  REQUIRE(s.ok());
  CHECK(s->total == 5);
  auto half = sum(2, std::nullopt);
  REQUIRE_FALSE(half.ok());
  CHECK(half.message() == "no number");

  auto u = unboxed(7);
  REQUIRE(u.ok());
  CHECK(*u == 7);
}
