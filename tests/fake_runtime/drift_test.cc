// The fake runtime's drift knobs (drift.h) on their own: pacing scaled for long
// prompts only, the control keys, and a prompt cache that fills to its cap and
// holds. soakd's own scenarios through them are in
// tests/integration/verdicts_fake_test.cc.
#include "tests/fake_runtime/drift.h"
#include "tests/catch.h"
#include "tests/fake_runtime/cli.h"

using namespace soak::fake;

TEST_CASE("drift: slow_pct scales prefill and pacing from slow_from_tokens on") {
  Knobs k;
  CHECK(drift::scaled_ms(k, 200'000, 330) == 330);  // 100 %: as paced
  k.slow_pct = 200;
  CHECK(drift::scaled_ms(k, 10, 330) == 660);  // from 0 tokens: every prompt
  k.slow_from_tokens = 30'000;
  CHECK(drift::scaled_ms(k, 29'999, 330) == 330);
  CHECK(drift::scaled_ms(k, 30'000, 330) == 660);
  k.slow_pct = 135;
  CHECK(drift::scaled_ms(k, 40'000, 100) == 135);
}

TEST_CASE("drift: /fake/control sets the drift keys and ignores what is not a count") {
  Knobs k;
  drift::control(k, {{"slow_pct", 170}, {"slow_from_tokens", 1000}, {"cache_ram", 48}, {"cache_fill_mib", 4}});
  CHECK(k.slow_pct == 170);
  CHECK(k.slow_from_tokens == 1000);
  CHECK(k.cache_ram_mib == 48);
  CHECK(k.cache_fill_mib == 4);
  drift::control(k, {{"slow_pct", -1}, {"cache_fill_mib", "8"}, {"build", "b1"}});
  CHECK(k.slow_pct == 170);
  CHECK(k.cache_fill_mib == 4);
}

TEST_CASE("drift: the prompt cache fills by cache_fill_mib per request up to --cache-ram, then holds") {
  constexpr uint64_t kMiB = 1024 * 1024;
  Knobs k;
  drift::PromptCache cache;
  cache.on_request(k);  // cache_fill_mib 0: nothing kept
  CHECK(cache.bytes() == 0);
  k.cache_ram_mib = 10;
  k.cache_fill_mib = 4;
  cache.on_request(k);
  cache.on_request(k);
  CHECK(cache.bytes() == 8 * kMiB);
  cache.on_request(k);  // the last 2 MiB under the cap
  CHECK(cache.bytes() == 10 * kMiB);
  cache.on_request(k);
  CHECK(cache.bytes() == 10 * kMiB);
  k.cache_ram_mib = 0;  // --cache-ram 0: off
  drift::PromptCache off;
  off.on_request(k);
  CHECK(off.bytes() == 0);
}

TEST_CASE("drift: the knobs on the command line, llama-server's --cache-ram among them") {
  auto o = parse_cli({"--listen", "127.0.0.1:0:healthy", "--slow-pct", "200", "--slow-from-tokens", "30000",
                      "--cache-ram", "48", "--cache-fill-mib", "4"});
  REQUIRE(o.ok());
  const Knobs& k = o->listeners.at(0).knobs;
  CHECK(k.slow_pct == 200);
  CHECK(k.slow_from_tokens == 30'000);
  CHECK(k.cache_ram_mib == 48);
  CHECK(k.cache_fill_mib == 4);
  CHECK(parse_cli({"--listen", "0"})->listeners.at(0).knobs.cache_ram_mib == kDefaultCacheRamMib);
  CHECK(usage_text().find("--cache-ram") != std::string::npos);
}

TEST_CASE("drift: the first-token delay starts after the requests the control left undelayed") {
  Knobs k;
  drift::FirstTokenDelay d;
  CHECK(d.on_start(k) == 0);  // no delay set
  drift::control(k, {{"first_token_delay_ms", 5000}});
  d.control({{"first_token_delay_ms", 5000}, {"first_token_delay_after", 2}});
  CHECK(k.first_token_delay_ms == 5000);
  CHECK(d.on_start(k) == 0);
  CHECK(d.on_start(k) == 0);
  CHECK(d.on_start(k) == 5000);
  CHECK(d.on_start(k) == 5000);
  drift::control(k, {{"first_token_delay_ms", 0}});
  CHECK(d.on_start(k) == 0);
}
