#include "tests/fake_runtime/text_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/hash.h"

namespace soak::fake {
namespace {

using json = nlohmann::json;

constexpr size_t kPieceBytes = 4;        // non-space bytes per token
constexpr size_t kMaxSpecialBytes = 32;  // longest `<|...|>` treated as one token
constexpr size_t kChunkBytes = 4;        // bytes per streamed piece of JSON / markers

constexpr std::string_view kFiller[] = {
    " the",  " quick", " brown", " fox",  " jumps", " over", " lazy",  " dog",  " and",   " then", " runs",
    " back", " home",  " to",    " rest", " by",    " fire", " while", " rain", " falls", " soft", " on",
    " roof", " of",    " old",   " barn", " near",  " hill", " where", " sun",  " sets",  " late",
};
constexpr std::string_view kReasoning[] = {
    " Let", " me", " think", " about", " what", " is", " asked", " here", " and", " answer", " it", " plainly",
};
constexpr std::string_view kLoop[] = {" and", " the", " same", " again"};

// Member `key` of `j`, or null when `j` is not an object or lacks it (const
// operator[] on a missing key is undefined behaviour in nlohmann::json).
const json& field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object() && part.value("type", "") == "text" && part.contains("text") && part["text"].is_string())
        out += part["text"].get<std::string>();
    }
  }
  return out;
}

std::vector<Piece> chunk_text(std::string_view text, PieceKind kind) {
  std::vector<Piece> out;
  for (size_t i = 0; i < text.size(); i += kChunkBytes) out.push_back({kind, std::string(text.substr(i, kChunkBytes))});
  return out;
}

const json* find_tool(const json& request) {
  const json& tools = field(request, "tools");
  if (!tools.is_array() || tools.empty() || !field(tools.front(), "function").is_object()) return nullptr;
  const json& choice = field(request, "tool_choice");
  if (choice.is_string() && choice.get<std::string>() == "none") return nullptr;
  if (choice.is_object()) {
    const json& wanted = field(field(choice, "function"), "name");
    for (const auto& t : tools)
      if (!wanted.is_null() && field(field(t, "function"), "name") == wanted) return &t;
  }
  return &tools.front();
}

const json* response_schema(const json& request, bool* json_mode) {
  *json_mode = false;
  const json& rf = field(request, "response_format");
  if (!rf.is_object()) return nullptr;
  std::string type = rf.value("type", "");
  if (type == "json_schema") {
    *json_mode = true;
    const json& nested = field(field(rf, "json_schema"), "schema");
    if (nested.is_object()) return &nested;
    if (field(rf, "schema").is_object()) return &field(rf, "schema");
    return nullptr;
  }
  if (type == "json_object") *json_mode = true;
  return nullptr;
}

}  // namespace

std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 2, "<|") == 0) {
      size_t close = text.find("|>", i + 2);
      if (close != std::string_view::npos && close + 2 - i <= kMaxSpecialBytes) {
        std::string piece(text.substr(i, close + 2 - i));
        out.push_back({static_cast<uint32_t>(fnv1a64(piece) % kFakeVocabSize), std::move(piece)});
        i = close + 2;
        continue;
      }
    }
    size_t start = i;
    while (i < text.size() && is_space(text[i])) ++i;
    size_t word = 0;
    while (i < text.size() && !is_space(text[i]) && word < kPieceBytes) {
      if (word > 0 && text.compare(i, 2, "<|") == 0) break;
      ++i;
      ++word;
    }
    std::string piece(text.substr(start, i - start));
    out.push_back({static_cast<uint32_t>(fnv1a64(piece) % kFakeVocabSize), std::move(piece)});
  }
  return out;
}

size_t count_tokens(std::string_view text) { return tokenize(text).size(); }

std::vector<uint32_t> token_ids(std::string_view text) {
  std::vector<uint32_t> ids;
  for (auto& t : tokenize(text)) ids.push_back(t.id);
  return ids;
}

size_t common_prefix(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

std::string render_chat_prompt(const json& request) {
  std::string out;
  const json& messages = field(request, "messages");
  size_t n = messages.is_array() ? messages.size() : 0;
  size_t first = 0;
  const json& tools = field(request, "tools");
  if (tools.is_array() && !tools.empty()) {
    out += "<|im_start|>system\n";
    if (n > 0 && field(messages[0], "role") == "system") {
      out += content_text(field(messages[0], "content")) + "\n\n";
      first = 1;
    }
    out += "# Tools\n\n<tools>";
    for (const auto& t : tools) out += "\n" + t.dump();
    out += "\n</tools><|im_end|>\n";
  }
  for (size_t i = first; i < n; ++i) {
    const json& m = messages[i];
    if (!m.is_object()) continue;
    const json& role = field(m, "role");
    out += "<|im_start|>" + (role.is_string() ? role.get<std::string>() : "user") + "\n" +
           content_text(field(m, "content"));
    const json& calls = field(m, "tool_calls");
    if (calls.is_array())
      for (const auto& tc : calls) out += "\n<tool_call>\n" + tc.dump() + "\n</tool_call>";
    out += "<|im_end|>\n";
  }
  out += "<|im_start|>assistant\n";
  // Qwen3's template closes an empty think block when thinking is explicitly off.
  if (field(field(request, "chat_template_kwargs"), "enable_thinking") == false) out += "<think>\n\n</think>\n\n";
  return out;
}

std::optional<std::string> find_marker(std::string_view prompt) {
  auto word_at = [&](size_t pos) {
    while (pos < prompt.size() &&
           (is_space(prompt[pos]) || prompt[pos] == '"' || prompt[pos] == '\'' || prompt[pos] == '`'))
      ++pos;
    size_t end = pos;
    while (end < prompt.size() && !is_space(prompt[end]) && prompt[end] != '"' && prompt[end] != '`' &&
           prompt.compare(end, 2, "<|") != 0)
      ++end;
    std::string word(prompt.substr(pos, end - pos));
    while (!word.empty() && std::string_view(".,;!?)'").find(word.back()) != std::string_view::npos) word.pop_back();
    return word;
  };
  // "reply with exactly: X" / "reply with exactly this code and nothing else: X"
  std::string low = lower(prompt);
  size_t e = low.rfind("exactly");
  if (e != std::string::npos) {
    size_t eol = prompt.find('\n', e);
    size_t colon = prompt.find(':', e);
    std::string w = word_at(colon != std::string_view::npos && colon < eol ? colon + 1 : e + 7);
    if (!w.empty()) return w;
  }
  // Otherwise the last code-shaped word: capitals or digits, a dash, then letters or
  // digits ("MARKER-xyz", "RIVER-4821"), as a long-context instruction names it.
  std::optional<std::string> last;
  for (size_t i = 0; i < prompt.size();) {
    while (i < prompt.size() && is_space(prompt[i])) ++i;
    size_t start = i;
    while (i < prompt.size() && !is_space(prompt[i])) ++i;
    std::string w = word_at(start);
    size_t dash = w.find('-');
    auto all = [&](size_t from, size_t to, auto pred) {
      if (from >= to) return false;
      for (size_t k = from; k < to; ++k)
        if (!pred(static_cast<unsigned char>(w[k]))) return false;
      return true;
    };
    if (dash != std::string::npos && std::isupper(static_cast<unsigned char>(w[0])) &&
        all(0, dash, [](unsigned char c) { return std::isupper(c) || std::isdigit(c); }) &&
        all(dash + 1, w.size(), [](unsigned char c) { return std::isalnum(c); }))
      last = w;
  }
  return last;
}

json sample_for_schema(const json& schema) {
  if (!schema.is_object()) return nullptr;
  if (schema.contains("const")) return schema["const"];
  if (schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) return schema["enum"][0];
  for (const char* key : {"anyOf", "oneOf", "allOf"})
    if (schema.contains(key) && schema[key].is_array() && !schema[key].empty())
      return sample_for_schema(schema[key][0]);
  std::string type;
  if (schema.contains("type")) {
    const json& t = schema["type"];
    if (t.is_string()) type = t.get<std::string>();
    if (t.is_array())
      for (const auto& x : t)
        if (x.is_string() && x.get<std::string>() != "null") {
          type = x.get<std::string>();
          break;
        }
  }
  if (type.empty() && schema.contains("properties")) type = "object";
  if (type == "object") {
    json obj = json::object();
    if (schema.contains("properties") && schema["properties"].is_object())
      for (const auto& [name, sub] : schema["properties"].items()) obj[name] = sample_for_schema(sub);
    return obj;
  }
  if (type == "string") {
    std::string s = "sample";
    size_t min_len = schema.value("minLength", 0);
    size_t max_len = schema.value("maxLength", static_cast<size_t>(64));
    while (s.size() < min_len) s += 'x';
    if (s.size() > max_len) s.resize(max_len);
    return s;
  }
  if (type == "integer" || type == "number") {
    double lo = schema.contains("minimum") && schema["minimum"].is_number() ? schema["minimum"].get<double>() : 0.0;
    double hi =
        schema.contains("maximum") && schema["maximum"].is_number() ? schema["maximum"].get<double>() : lo + 100.0;
    if (schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"].is_number())
      lo = schema["exclusiveMinimum"].get<double>() + 1.0;
    double v = std::min(hi, lo + (type == "integer" ? 42.0 : 0.5));
    if (type == "integer") return static_cast<int64_t>(std::floor(v));
    return v;
  }
  if (type == "boolean") return true;
  if (type == "array") {
    json arr = json::array();
    size_t n = std::max<size_t>(schema.value("minItems", static_cast<size_t>(1)), 1);
    for (size_t i = 0; i < n; ++i) arr.push_back(sample_for_schema(schema.value("items", json::object())));
    return arr;
  }
  if (type == "null") return nullptr;
  return "sample";
}

std::optional<int> requested_max_tokens(const json& request) {
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    if (field(request, key).is_number_integer()) {
      int v = field(request, key).get<int>();
      if (v > 0) return v;
    }
  }
  return std::nullopt;
}

int conversation_turn(const json& request) {
  int turn = 1;
  const json& msgs = field(request, "messages");
  if (msgs.is_array())
    for (const auto& m : msgs) turn += field(m, "role") == "assistant" ? 1 : 0;
  return turn;
}

bool thinking_enabled(const json& request) {
  // Ollama (openai/openai.go) takes reasoning_effort; "none" is off.
  const json& effort = field(request, "reasoning_effort");
  if (effort.is_string()) return effort != "none";
  return field(field(request, "chat_template_kwargs"), "enable_thinking") == true;
}

bool wants_stream(const json& request) { return field(request, "stream") == true; }

bool wants_usage_in_stream(const json& request) {
  return field(field(request, "stream_options"), "include_usage") == true;
}

namespace {

// MarkupLeak: what a runtime whose reasoning parser or template broke writes
// into content (scenario.h Leak). The reasoning it would have separated goes
// into content with it; tool calls are left as they are.
void leak_markup(ReplyPlan& plan, Leak leak, const std::string& eos_token) {
  std::vector<Piece> reasoning, content;
  for (auto& p : plan.pieces) (p.kind == PieceKind::Reasoning ? reasoning : content).push_back(std::move(p));
  std::vector<Piece> out;
  auto text = [&out](std::string t) { out.push_back({PieceKind::Content, std::move(t)}); };
  auto thought = [&] {
    for (auto& p : reasoning) text(std::move(p.text));
  };
  auto answer = [&] {
    for (auto& p : content) out.push_back(std::move(p));
  };
  switch (leak) {
    case Leak::Think:
      // Qwen3's own form: an empty block when it did not think.
      text("<think>");
      text("\n");
      thought();
      text("\n");
      text("</think>");
      text("\n\n");
      answer();
      break;
    case Leak::ImEnd:
    case Leak::Eos:
      for (auto& p : reasoning) out.push_back(std::move(p));
      answer();
      text(leak == Leak::ImEnd || eos_token.empty() ? "<|im_end|>" : eos_token);
      break;
    case Leak::Harmony:
      if (!reasoning.empty()) {
        for (const char* t : {"<|channel|>", "analysis", "<|message|>"}) text(t);
        thought();
        for (const char* t : {"<|end|>", "<|start|>", "assistant"}) text(t);
      }
      for (const char* t : {"<|channel|>", "final", "<|message|>"}) text(t);
      answer();
      break;
    case Leak::Fffd:
      for (auto& p : reasoning) out.push_back(std::move(p));
      if (!content.empty()) content[content.size() / 2].text += "\xEF\xBF\xBD";
      answer();
      break;
  }
  plan.pieces = std::move(out);
}

}  // namespace

ReplyPlan plan_reply(const json& request, const std::string& prompt, Scenario scenario, const Knobs& knobs) {
  ReplyPlan plan;
  plan.finish_reason = "stop";
  if (thinking_enabled(request))
    for (int i = 0; i < knobs.reasoning_tokens; ++i) {
      std::string word(kReasoning[i % std::size(kReasoning)]);
      if (i == 0) word.erase(0, 1);
      plan.pieces.push_back({PieceKind::Reasoning, std::move(word)});
    }

  bool json_mode = false;
  const json* schema = response_schema(request, &json_mode);
  const json* tool = find_tool(request);
  // DeepToolDrop: past its threshold the runtime answers in text, as the
  // seeds' runtimes lost tool calls on deep-context turns.
  if (tool && scenario == Scenario::DeepToolDrop &&
      count_tokens(prompt) > static_cast<size_t>(knobs.drop_tools_above_tokens))
    tool = nullptr;

  if (scenario == Scenario::RepetitionLoop) {
    for (int i = 0; i < knobs.repetition_tokens; ++i)
      plan.pieces.push_back({PieceKind::Content, std::string(kLoop[i % std::size(kLoop)])});
    plan.finish_reason = "length";
  } else if (tool) {
    plan.tool_call = true;
    const json& fn = field(*tool, "function");
    plan.tool_name = fn.value("name", "tool");
    std::string args = "{}";
    if (scenario != Scenario::EmptyToolArgs && field(fn, "parameters").is_object())
      args = sample_for_schema(field(fn, "parameters")).dump();
    for (auto& p : chunk_text(args, PieceKind::ToolArgs)) plan.pieces.push_back(std::move(p));
    plan.finish_reason = "tool_calls";
  } else if (json_mode) {
    std::string doc = schema ? sample_for_schema(*schema).dump() : json{{"answer", "sample"}}.dump();
    if (scenario == Scenario::InvalidJson) doc.resize(doc.size() * 3 / 5);
    for (auto& p : chunk_text(doc, PieceKind::Content)) plan.pieces.push_back(std::move(p));
  } else if (auto marker = find_marker(prompt)) {
    for (auto& p : chunk_text(*marker, PieceKind::Content)) plan.pieces.push_back(std::move(p));
  } else {
    uint64_t seed = fnv1a64(prompt);
    for (int i = 0; i < knobs.reply_tokens; ++i) {
      // Words drawn by hash, not in turn: a long answer must not read as a loop
      // (every answer goes through the repetition detector).
      std::string word(kFiller[fnv1a64(std::to_string(seed) + ":" + std::to_string(i)) % std::size(kFiller)]);
      if (i == 0) word.erase(0, 1);  // an answer does not start with a space
      plan.pieces.push_back({PieceKind::Content, std::move(word)});
    }
  }

  // EmptyContent: nothing but the finish and usage; ReasoningOnly: the answer
  // arrives as reasoning (a template that never closes its think block).
  if (scenario == Scenario::EmptyContent || scenario == Scenario::ReasoningOnly) {
    std::vector<Piece> kept;
    for (auto& p : plan.pieces) {
      if (p.kind != PieceKind::Content) {
        kept.push_back(std::move(p));
      } else if (scenario == Scenario::ReasoningOnly) {
        kept.push_back({PieceKind::Reasoning, std::move(p.text)});
      }
    }
    plan.pieces = std::move(kept);
  }

  if (scenario == Scenario::MarkupLeak && !plan.tool_call)
    leak_markup(plan, parse_leak(knobs.leak).value_or(Leak::Think), knobs.eos_token);

  std::optional<int> limit = requested_max_tokens(request);
  if (!limit && knobs.server_max_tokens > 0) limit = knobs.server_max_tokens;
  if (limit && plan.pieces.size() > static_cast<size_t>(*limit)) {
    plan.pieces.resize(*limit);
    plan.finish_reason = "length";
  }
  return plan;
}

std::vector<float> embed(std::string_view text, int dims) {
  std::vector<float> v(std::max(dims, 1));
  double norm = 0;
  uint64_t h = fnv1a64(text);
  for (auto& x : v) {
    h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>(static_cast<int64_t>(h >> 33) % 2001 - 1000) / 1000.0f;
    norm += static_cast<double>(x) * x;
  }
  norm = std::sqrt(norm);
  if (norm > 0)
    for (auto& x : v) x = static_cast<float>(x / norm);
  return v;
}

double relevance(std::string_view query, std::string_view document) {
  auto words = [](std::string_view s) {
    std::set<std::string> out;
    std::string cur;
    for (char c : s) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else if (!cur.empty()) {
        out.insert(cur);
        cur.clear();
      }
    }
    if (!cur.empty()) out.insert(cur);
    return out;
  };
  auto q = words(query);
  if (q.empty()) return 0.0;
  auto d = words(document);
  size_t hit = 0;
  for (const auto& w : q) hit += d.count(w);
  return static_cast<double>(hit) / static_cast<double>(q.size());
}

}  // namespace soak::fake
