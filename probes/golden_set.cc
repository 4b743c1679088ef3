#include "probes/golden_set.h"

#include <array>
#include <utility>

#include "core/hash.h"
#include "probes/json_fields.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;
using jsonf::json;

// Each kind draws from its own stream of the seed, so adding prompts of one
// kind never moves another kind's.
constexpr uint64_t kFactualStream = 0x676f6c64656e3031ULL;
constexpr uint64_t kCodeStream = 0x676f6c64656e3032ULL;
constexpr uint64_t kToolStream = 0x676f6c64656e3033ULL;
constexpr uint64_t kJsonStream = 0x676f6c64656e3034ULL;
constexpr uint64_t kContextStream = 0x676f6c64656e3035ULL;

constexpr std::array<std::string_view, 16> kSubjects{"how a rainbow forms",
                                                     "why the sky looks blue",
                                                     "what causes the tides",
                                                     "how a refrigerator works",
                                                     "why leaves change colour in autumn",
                                                     "how vaccines train the immune system",
                                                     "what a compiler does",
                                                     "how bees make honey",
                                                     "why ice floats on water",
                                                     "how a bicycle stays upright",
                                                     "what causes thunder",
                                                     "how satellite navigation finds a position",
                                                     "why bread rises",
                                                     "how a lighthouse is seen from far away",
                                                     "what a prime number is",
                                                     "how the heart pumps blood"};
constexpr std::array<std::string_view, 4> kFactualForms{
    "Explain {} in about {} words.", "In about {} words, describe {}.",
    "Give a plain explanation of {}, about {} words long.", "A student asks {}. Answer in about {} words."};
constexpr std::array<std::string_view, 10> kCodeTasks{"reverses a string",
                                                      "returns the n-th Fibonacci number",
                                                      "checks whether a number is prime",
                                                      "counts the vowels in a string",
                                                      "merges two sorted lists into one sorted list",
                                                      "computes the greatest common divisor of two integers",
                                                      "removes duplicates from a list while keeping their order",
                                                      "converts a temperature from Celsius to Fahrenheit",
                                                      "returns the largest element of a list",
                                                      "checks whether a string is a palindrome"};
constexpr std::array<std::string_view, 4> kLanguages{"Python", "C", "JavaScript", "Go"};
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kCities{{{"Lima", "Peru"},
                                                                                {"Oslo", "Norway"},
                                                                                {"Nairobi", "Kenya"},
                                                                                {"Hanoi", "Vietnam"},
                                                                                {"Quito", "Ecuador"},
                                                                                {"Tallinn", "Estonia"},
                                                                                {"Perth", "Australia"},
                                                                                {"Porto", "Portugal"}}};
constexpr std::array<std::string_view, 8> kBuilds{"nightly-arm64", "release-candidate", "docs-site",    "kernel-tests",
                                                  "mobile-client", "data-pipeline",     "search-index", "edge-proxy"};

// Fills "{}" placeholders in order.
std::string fill(std::string_view form, std::initializer_list<std::string_view> args) {
  std::string out;
  auto arg = args.begin();
  for (size_t i = 0; i < form.size(); ++i) {
    if (form[i] == '{' && i + 1 < form.size() && form[i + 1] == '}' && arg != args.end()) {
      out += *arg++;
      ++i;
    } else {
      out += form[i];
    }
  }
  return out;
}

// The first `n` of 0..size-1 in the seed's order (Fisher–Yates on splitmix64).
std::vector<size_t> draw(uint64_t state, size_t size, size_t n) {
  std::vector<size_t> order(size);
  for (size_t i = 0; i < size; ++i) order[i] = i;
  for (size_t i = size - 1; i > 0; --i) std::swap(order[i], order[splitmix64(state) % (i + 1)]);
  order.resize(std::min(n, size));
  return order;
}

std::string two_digits(int i) { return (i < 10 ? "0" : "") + std::to_string(i); }

ojson user_message(const std::string& text) {
  ojson m;
  m["role"] = "user";
  m["content"] = text;
  return m;
}

// The answer's text: its content, else its tool calls' names and arguments.
std::string answer_text(const json& message) {
  std::string text = jsonf::get_string(message, "content").value_or("");
  if (const json* calls = jsonf::array_member(message, "tool_calls")) {
    for (const json& c : *calls) {
      const json* fn = jsonf::member(c, "function");
      if (!fn) continue;
      text +=
          "\n" + jsonf::get_string(*fn, "name").value_or("") + " " + jsonf::get_string(*fn, "arguments").value_or("");
    }
  }
  return text;
}

std::optional<TokenChoice> read_choice(const json& e) {
  TokenChoice c;
  const auto token = jsonf::get_string(e, "token");
  const auto logprob = jsonf::get_number(e, "logprob");
  if (!token || !logprob) return std::nullopt;
  c.token = *token;
  c.logprob = *logprob;
  c.id = jsonf::get_int(e, "id");
  return c;
}

}  // namespace

std::string_view to_string(GoldenKind k) {
  switch (k) {
    case GoldenKind::Factual: return "factual";
    case GoldenKind::Code: return "code";
    case GoldenKind::ToolCall: return kGoldenToolCallKind;
    case GoldenKind::JsonSchema: return kGoldenJsonSchemaKind;
    case GoldenKind::Context: return "context";
  }
  return "factual";
}

std::vector<GoldenPrompt> golden_set(uint64_t seed) {
  std::vector<GoldenPrompt> set;
  const std::string words = std::to_string(kGoldenAnswerWords);
  const auto add = [&](GoldenKind kind, std::string id, std::string text, int64_t context = 0) {
    set.push_back(GoldenPrompt{std::move(id), kind, std::move(text), context});
  };

  uint64_t forms = seed ^ kFactualStream ^ 1;
  const auto subjects = draw(seed ^ kFactualStream, kSubjects.size(), kGoldenFactual);
  for (int i = 0; i < kGoldenFactual; ++i) {
    const std::string_view form = kFactualForms[splitmix64(forms) % kFactualForms.size()];
    // Forms put the subject or the word count first; both orders read as English.
    const bool count_first = form.find("{} words,") != std::string_view::npos;
    const std::string_view subject = kSubjects[subjects[static_cast<size_t>(i)]];
    add(GoldenKind::Factual, "factual/" + two_digits(i),
        count_first ? fill(form, {words, subject}) : fill(form, {subject, words}));
  }

  uint64_t langs = seed ^ kCodeStream ^ 1;
  const auto tasks = draw(seed ^ kCodeStream, kCodeTasks.size(), kGoldenCode);
  for (int i = 0; i < kGoldenCode; ++i) {
    const std::string_view lang = kLanguages[splitmix64(langs) % kLanguages.size()];
    add(GoldenKind::Code, "code/" + two_digits(i),
        fill("Write a short {} function that {}. Reply with the code only, about {} words.",
             {lang, kCodeTasks[tasks[static_cast<size_t>(i)]], words}));
  }

  uint64_t units = seed ^ kToolStream ^ 1;
  const auto cities = draw(seed ^ kToolStream, kCities.size(), kGoldenToolCall);
  for (int i = 0; i < kGoldenToolCall; ++i) {
    const auto& [city, country] = kCities[cities[static_cast<size_t>(i)]];
    const std::string_view unit = splitmix64(units) % 2 ? "celsius" : "fahrenheit";
    add(GoldenKind::ToolCall, std::string(to_string(GoldenKind::ToolCall)) + "/" + two_digits(i),
        fill("What is the weather in {}, {}, in {}? Use the tool.", {city, country, unit}));
  }

  const auto builds = draw(seed ^ kJsonStream, kBuilds.size(), kGoldenJsonSchema);
  for (int i = 0; i < kGoldenJsonSchema; ++i)
    add(GoldenKind::JsonSchema, std::string(to_string(GoldenKind::JsonSchema)) + "/" + two_digits(i),
        fill("Report the status of the {} build as JSON: whether it is ok, its level (low, medium or high) and a "
             "short note.",
             {kBuilds[builds[static_cast<size_t>(i)]]}));

  const auto context = [&](int64_t tokens, int count) {
    for (int i = 0; i < count; ++i) {
      const uint64_t filler_seed = seed ^ kContextStream ^ static_cast<uint64_t>(tokens * 16 + i);
      add(GoldenKind::Context, "context/" + std::to_string(tokens) + "/" + std::to_string(i),
          filler_text(filler_seed, estimate_words(tokens)) + "\n\n" +
              fill("In about {} words, say which words occur most often in the text above.", {words}),
          tokens);
    }
  };
  context(kGoldenContextSmall, kGoldenContext2K);
  context(kGoldenContextLarge, kGoldenContext8K);
  return set;
}

std::string golden_set_hash(const std::vector<GoldenPrompt>& set) {
  uint64_t h = fnv1a64("golden-set");
  for (const GoldenPrompt& p : set) {
    h = fnv1a64(p.id, h);
    h = fnv1a64(std::string_view("\x1f", 1), h);
    h = fnv1a64(p.text, h);
  }
  return hex64(h);
}

BuiltRequest golden_request(const ChatRequestOptions& opts, const GoldenPrompt& p) {
  ChatRequestOptions o = opts;
  o.sampling.temperature = 0;
  o.sampling.top_p = 1;
  o.sampling.top_k = 1;
  o.streaming = Streaming::Off;
  o.thinking = Thinking::Off;
  ojson msgs = ojson::array();
  msgs.push_back(user_message(p.text));
  ojson b = chat_body(o, std::move(msgs));
  b["seed"] = kGoldenSamplingSeed;
  // soakd's own bound (see the header): the answer is stored whole up to it.
  b["max_tokens"] = kGoldenMaxTokens;
  if (o.dialect.prompt_cache == PromptCacheSwitch::CachePromptField) b["cache_prompt"] = false;
  if (o.dialect.logprobs == Logprobs::TopLogprobs) {
    b["logprobs"] = true;
    b["top_logprobs"] = kGoldenTopLogprobs;
  }
  if (p.kind == GoldenKind::ToolCall) {
    b["tools"] = tool_probe_tools();
    if (o.dialect.tool_choice == ToolChoice::Supported) b["tool_choice"] = "required";
    b["parallel_tool_calls"] = false;
  } else if (p.kind == GoldenKind::JsonSchema) {
    b["response_format"]["type"] = "json_schema";
    b["response_format"]["json_schema"]["name"] = "build_status";
    b["response_format"]["json_schema"]["strict"] = true;
    b["response_format"]["json_schema"]["schema"] = ojson::parse(strict_json_schema().dump());
  }
  BuiltRequest r = built_request(ProbeKind::Equivalence, o, b);
  r.max_tokens = kGoldenMaxTokens;
  return r;
}

std::optional<GoldenAnswer> read_golden_answer(const json& body, std::string_view prompt_id) {
  const json* choices = jsonf::array_member(body, "choices");
  if (!choices || choices->empty()) return std::nullopt;
  const json& choice = (*choices)[0];
  const json* message = jsonf::member(choice, "message");
  if (!message || !message->is_object()) return std::nullopt;
  GoldenAnswer a;
  a.prompt_id = std::string(prompt_id);
  a.text_hash = hash_hex(answer_text(*message));
  const json* logprobs = jsonf::member(choice, "logprobs");
  const json* content = logprobs ? jsonf::array_member(*logprobs, "content") : nullptr;
  if (!content) return a;
  a.logprobs = LogprobShape::TopK;
  for (const json& e : *content) {
    if (a.steps.size() >= kGoldenMaxSteps) break;
    auto chosen = read_choice(e);
    if (!chosen) continue;
    TokenStep s;
    s.chosen = std::move(*chosen);
    if (const json* top = jsonf::array_member(e, "top_logprobs"))
      for (const json& t : *top)
        if (auto c = read_choice(t)) s.top.push_back(std::move(*c));
    sort_top(s);
    a.steps.push_back(std::move(s));
  }
  return a;
}

}  // namespace soak::probes
