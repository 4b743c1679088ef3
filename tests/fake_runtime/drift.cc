#include "tests/fake_runtime/drift.h"

#include <algorithm>

namespace soak::fake::drift {

namespace {
constexpr uint64_t kMiB = 1024 * 1024;
constexpr size_t kPageBytes = 4096;
}  // namespace

int64_t scaled_ms(const Knobs& k, size_t prompt_tokens, int64_t ms) {
  if (k.slow_pct == 100 || prompt_tokens < static_cast<size_t>(std::max(k.slow_from_tokens, 0))) return ms;
  return ms * std::max(k.slow_pct, 0) / 100;
}

void control(Knobs& k, const nlohmann::json& body) {
  if (!body.is_object()) return;
  auto set = [&](const char* key, int& field) {
    auto it = body.find(key);
    if (it != body.end() && it->is_number_integer() && it->get<int64_t>() >= 0) field = it->get<int>();
  };
  set("slow_pct", k.slow_pct);
  set("slow_from_tokens", k.slow_from_tokens);
  set("cache_ram", k.cache_ram_mib);
  set("cache_fill_mib", k.cache_fill_mib);
  set("first_token_delay_ms", k.first_token_delay_ms);
}

void FirstTokenDelay::control(const nlohmann::json& body) {
  if (!body.is_object()) return;
  auto it = body.find("first_token_delay_after");
  if (it != body.end() && it->is_number_integer() && it->get<int64_t>() >= 0) before_ = it->get<int64_t>();
}

int64_t FirstTokenDelay::on_start(const Knobs& k) {
  if (before_ > 0) {
    --before_;
    return 0;
  }
  return std::max(k.first_token_delay_ms, 0);
}

void PromptCache::on_request(const Knobs& k) {
  const uint64_t cap = static_cast<uint64_t>(std::max(k.cache_ram_mib, 0)) * kMiB;
  const uint64_t want = static_cast<uint64_t>(std::max(k.cache_fill_mib, 0)) * kMiB;
  const uint64_t add = bytes_ >= cap ? 0 : std::min(want, cap - bytes_);
  if (add == 0) return;
  std::unique_ptr<char[]> block(new char[add]);
  // Touch every page so the cache is resident, not just reserved.
  for (uint64_t i = 0; i < add; i += kPageBytes) block[i] = static_cast<char>(i / kPageBytes + 1);
  blocks_.push_back(std::move(block));
  bytes_ += add;
}

}  // namespace soak::fake::drift
