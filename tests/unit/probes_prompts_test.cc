// Prompt fixtures: determinism, fresh vs exact repeat, sizing toward a token
// target with measured counts, the shared system prompt and workload ids.
#include <set>
#include <string>

#include "core/hash.h"
#include "probes/probe_step.h"
#include "probes/prompts.h"
#include "probes/validators.h"
#include "tests/catch.h"

using namespace soak;
using namespace soak::probes;

namespace {
// A stand-in tokenizer: a fixed bytes-per-token ratio plus chat-template overhead.
int64_t fake_token_count(const std::string& text) { return static_cast<int64_t>(text.size() / 4.6) + 8; }
}  // namespace

TEST_CASE("splitmix64 matches the reference sequence") {
  uint64_t s = 0;
  CHECK(splitmix64(s) == 0xe220a8397b1dcdafULL);
  CHECK(splitmix64(s) == 0x6e789e6aa1b965f4ULL);
  CHECK(splitmix64(s) == 0x06c45d188009454fULL);
}

TEST_CASE("filler text is deterministic, seed-dependent and not looping") {
  std::string a = filler_text(7, 500);
  CHECK(a == filler_text(7, 500));
  CHECK(a != filler_text(8, 500));
  CHECK(filler_text(7, 0).empty());
  // Word count is what was asked for.
  size_t spaces = 0;
  for (char c : a) spaces += (c == ' ' || c == '\n') ? 1 : 0;
  CHECK(a.find("  ") == std::string::npos);
  CHECK(a.back() == '.');
  CHECK(a.find("\n\n") != std::string::npos);  // paragraphs
  CHECK(isupper(static_cast<unsigned char>(a[0])));
  CHECK_FALSE(detect_repetition(filler_text(kDefaultFixtureSeed, 20000)).looping);
  CHECK(spaces >= 499);
}

TEST_CASE("fresh prompts differ from their first bytes; an exact repeat is byte for byte") {
  PromptFixture f = long_context_fixture(1024);
  NonceSource nonces(42);
  std::string n1 = nonces.next(), n2 = nonces.next();
  CHECK(n1.size() == 16);
  CHECK(n1 != n2);
  std::string fresh1 = prompt_with_nonce(f, n1);
  std::string fresh2 = prompt_with_nonce(f, n2);
  // The first differing byte sits inside the nonce on the first line: no prefix to share.
  size_t i = 0;
  while (fresh1[i] == fresh2[i]) ++i;
  CHECK(i < 8 + 16);
  CHECK(fresh1.find(f.body) == fresh1.size() - f.body.size());
  CHECK(prompt_with_nonce(f, n1) == fresh1);  // the repeat
  // Nonces are reproducible from their seed and do not collide over a long run.
  NonceSource again(42);
  CHECK(again.next() == n1);
  std::set<std::string> seen;
  NonceSource many(7);
  for (int k = 0; k < 10000; ++k) seen.insert(many.next());
  CHECK(seen.size() == 10000);
}

TEST_CASE("the fixture hash identifies the text, not the nonce") {
  PromptFixture a = long_context_fixture(8192);
  PromptFixture b = long_context_fixture(8192);
  CHECK(a.hash == b.hash);
  CHECK(a.hash.size() == 16);
  CHECK(a.name == "long_context/8192");
  CHECK(long_context_fixture(8192, kDefaultFixtureSeed + 1).hash != a.hash);
  CHECK(long_context_fixture(1024).hash != a.hash);
  PromptFixture resized = adjust_to_measured(a, a.target_tokens * 2);
  CHECK(resized.hash != a.hash);  // a different text is a different fixture
  CHECK(a.body.find(fixture_marker(a)) != std::string::npos);
}

TEST_CASE("sizing: the estimate, the tolerance and refinement from measured counts") {
  CHECK(estimate_words(1024) == 757);        // (1024 - 40) / 1.3
  CHECK(within_size_tolerance(1024, 1044));  // 2 % of 1024 rounds to 20
  CHECK_FALSE(within_size_tolerance(1024, 1045));
  CHECK_FALSE(within_size_tolerance(100, 117));  // the 16-token floor
  CHECK(within_size_tolerance(131072, 131072 + 2621));
  CHECK_FALSE(within_size_tolerance(131072, 131072 + 2700));

  for (int64_t target : {1024, 8192, 32768, 65536, 100000, 131072}) {
    PromptFixture f = long_context_fixture(target);
    int rounds = 0;
    while (!within_size_tolerance(target, fake_token_count(f.body)) && rounds < 6) {
      f = adjust_to_measured(f, fake_token_count(f.body));
      ++rounds;
    }
    INFO("target " << target << " words " << f.words << " measured " << fake_token_count(f.body));
    CHECK(within_size_tolerance(target, fake_token_count(f.body)));
    CHECK(rounds <= 3);
    // The same measured count always gives the same next fixture.
    CHECK(adjust_to_measured(f, target * 3).body == adjust_to_measured(f, target * 3).body);
  }
  PromptFixture f = long_context_fixture(1024);
  CHECK(adjust_to_measured(f, 1030).body == f.body);  // already within tolerance
  CHECK(adjust_to_measured(f, 0).body == f.body);     // no measurement
  CHECK(adjust_to_measured(f, 1100).words < f.words);
  CHECK(adjust_to_measured(f, 900).words > f.words);
}

TEST_CASE("markers and the marker prompt") {
  std::string m = make_marker(1);
  CHECK(m == make_marker(1));
  CHECK(m != make_marker(2));
  size_t dash = m.find('-');
  REQUIRE(dash != std::string::npos);
  CHECK(m.size() - dash - 1 == 4);
  for (size_t i = 0; i < dash; ++i) CHECK(isupper(static_cast<unsigned char>(m[i])));
  CHECK(marker_prompt(m).find(m) != std::string::npos);
}

TEST_CASE("shared system prompt: about 7 KB, stable, nonce first; user turns change") {
  std::string a = shared_system_prompt(kDefaultFixtureSeed, "0123456789abcdef");
  std::string b = shared_system_prompt(kDefaultFixtureSeed, "0123456789abcdef");
  CHECK(a == b);
  CHECK(a.rfind("Session 0123456789abcdef\n\n", 0) == 0);
  std::string body = a.substr(a.find("\n\n") + 2);
  CHECK(body.size() <= kSharedSystemPromptBytes);
  CHECK(body.size() >= kSharedSystemPromptBytes - 200);
  CHECK(body.back() == '.');
  // Pinned: the shared prefix is the same bytes on every run and every
  // machine, so a runtime's prefix cache and a stored hash keep meaning.
  CHECK(shared_system_prompt_hash(kDefaultFixtureSeed) == "0ca4e4be226470ef");
  CHECK(hash_hex(a) == "926693aa3727fb57");
  CHECK(shared_system_prompt_hash(kDefaultFixtureSeed) != shared_system_prompt_hash(1));
  std::set<std::string> turns;
  for (int64_t t = 0; t < 200; ++t) turns.insert(user_turn(kDefaultFixtureSeed, t));
  CHECK(turns.size() == 200);
  CHECK(user_turn(kDefaultFixtureSeed, 3) ==
        "Turn 3: in two sentences, say what the project notes suggest about the point, the form and the carries.");
  CHECK(user_turn(kDefaultFixtureSeed, 3).rfind("Turn 3: ", 0) == 0);
}

TEST_CASE("workload ids") {
  CHECK(workload_id(ProbeKind::LongContext, 32768, CacheState::Fresh) == "long_context/32768/fresh");
  CHECK(workload_id(ProbeKind::LongContext, 131072, CacheState::Repeat) == "long_context/131072/repeat");
  CHECK(workload_id(ProbeKind::SharedPrefix, 7168, CacheState::SharedPrefix) == "shared_prefix/7168/shared_prefix");
  CHECK(workload_id(ProbeKind::Burst, 8) == "burst/8");
  CHECK(workload_id(ProbeKind::Thinking, std::nullopt, CacheState::None, "on") == "thinking/on");
  CHECK(workload_id(ProbeKind::Marker) == "marker");
}

TEST_CASE("a sized long-context fixture is remembered by its word count and rebuilt the same") {
  CandidateState st;
  const uint64_t seed = 42;
  PromptFixture f = long_context_fixture(32768, seed);
  f = adjust_to_measured(f, fake_token_count(f.body));  // sized by a measurement: not the first estimate
  REQUIRE(f.words != estimate_words(32768));
  CHECK_FALSE(recall_sized(st, 32768, seed).has_value());
  remember_sized(st, 32768, {f, "tokenize", 32900});
  REQUIRE(st.long_context.count(32768) == 1);
  CHECK(st.long_context.at(32768).words == f.words);
  auto back = recall_sized(st, 32768, seed);
  REQUIRE(back.has_value());
  CHECK(back->fixture.hash == f.hash);
  CHECK(back->fixture.body == f.body);
  CHECK(back->fixture.name == f.name);
  CHECK(back->sized_by == "tokenize");
  CHECK(back->measured_tokens == 32900);
  CHECK_FALSE(recall_sized(st, 8192, seed).has_value());
}
