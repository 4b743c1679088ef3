#include "probes/requests.h"

namespace soak::probes {
namespace {

using ojson = nlohmann::ordered_json;

ojson message(std::string_view role, std::string_view content) {
  ojson m;
  m["role"] = std::string(role);
  m["content"] = std::string(content);
  return m;
}

BuiltRequest user_only(ProbeKind kind, const ChatRequestOptions& o, std::string_view content) {
  ojson msgs = ojson::array();
  msgs.push_back(message("user", content));
  return built_request(kind, o, chat_body(o, std::move(msgs)));
}

nlohmann::json make_strict_schema() {
  return nlohmann::json::parse(R"({
    "type": "object",
    "properties": {
      "ok": {"type": "boolean"},
      "level": {"type": "string", "enum": ["low", "medium", "high"]},
      "note": {"type": "string", "maxLength": 40}
    },
    "required": ["ok", "level", "note"],
    "additionalProperties": false
  })");
}

// A tool whose required arguments include an object: the shape where some
// runtimes answer `{}` (empty_tool_args) or flatten the nested object.
ToolExpectation make_tool() {
  return ToolExpectation{"lookup_weather", nlohmann::json::parse(R"({
    "type": "object",
    "properties": {
      "location": {
        "type": "object",
        "properties": {
          "city": {"type": "string", "minLength": 1},
          "country": {"type": "string", "minLength": 1}
        },
        "required": ["city", "country"],
        "additionalProperties": false
      },
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
    },
    "required": ["location", "unit"],
    "additionalProperties": false
  })")};
}

}  // namespace

// The common head of every chat body: model, messages, sampling, streaming and
// thinking, in that order. Deliberately no max_tokens / max_completion_tokens.
ojson chat_body(const ChatRequestOptions& o, ojson messages) {
  ojson b;
  b["model"] = o.model;
  b["messages"] = std::move(messages);
  b["temperature"] = o.sampling.temperature;
  b["top_p"] = o.sampling.top_p;
  if (o.dialect.top_k == TopK::Sent) b["top_k"] = o.sampling.top_k;
  if (o.streaming == Streaming::On) {
    b["stream"] = true;
    b["stream_options"]["include_usage"] = true;
    if (o.dialect.prefill_reports == PrefillReports::PromptProgressChunks) b["return_progress"] = true;
  } else {
    b["stream"] = false;
  }
  if (o.thinking) {
    if (o.dialect.thinking_switch == ThinkingSwitch::ChatTemplateKwargs) {
      b["chat_template_kwargs"]["enable_thinking"] = *o.thinking == Thinking::On;
    } else {
      b["reasoning_effort"] = *o.thinking == Thinking::On ? "medium" : "none";
    }
  }
  return b;
}

BuiltRequest built_request(ProbeKind kind, const ChatRequestOptions& o, const ojson& body) {
  BuiltRequest r;
  r.kind = kind;
  r.path = std::string(o.dialect.chat_path);
  r.body = body.dump(-1, ' ', false, ojson::error_handler_t::replace);
  r.streaming = o.streaming;
  if (o.thinking) r.thinking = *o.thinking == Thinking::On;
  r.sampling_json = o.sampling.to_json();
  if (o.dialect.top_k == TopK::Dropped) {
    ojson s = ojson::parse(r.sampling_json, nullptr, false);
    if (s.is_object()) {
      s["not_applied"] = ojson::array({"top_k"});
      r.sampling_json = s.dump();
    }
  }
  return r;
}

const nlohmann::json& strict_json_schema() {
  static const nlohmann::json kSchema = make_strict_schema();
  return kSchema;
}

const ToolExpectation& tool_probe_expectation() {
  static const ToolExpectation kTool = make_tool();
  return kTool;
}

BuiltRequest marker_request(const ChatRequestOptions& o, std::string_view marker) {
  return user_only(ProbeKind::Marker, o, marker_prompt(marker));
}

BuiltRequest stream_request(const ChatRequestOptions& o) {
  return user_only(ProbeKind::Stream, o, "Count from one to ten in words, separated by commas.");
}

BuiltRequest strict_json_request(const ChatRequestOptions& o) {
  ojson msgs = ojson::array();
  msgs.push_back(message("user",
                         "Report the status of a nightly build as JSON: whether it is ok, its level (low, medium or "
                         "high) and a short note."));
  ojson b = chat_body(o, std::move(msgs));
  b["response_format"]["type"] = "json_schema";
  b["response_format"]["json_schema"]["name"] = "build_status";
  b["response_format"]["json_schema"]["strict"] = true;
  b["response_format"]["json_schema"]["schema"] = ojson::parse(strict_json_schema().dump());
  return built_request(ProbeKind::StrictJson, o, b);
}

ojson tool_probe_tools() {
  const ToolExpectation& t = tool_probe_expectation();
  ojson tool;
  tool["type"] = "function";
  tool["function"]["name"] = t.name;
  tool["function"]["description"] = "Look up the current weather for a location";
  tool["function"]["parameters"] = ojson::parse(t.parameters.dump());
  return ojson::array({tool});
}

BuiltRequest tool_call_request(const ChatRequestOptions& o) {
  ojson msgs = ojson::array();
  msgs.push_back(message("user", "What is the weather in Lima, Peru, in celsius? Use the tool."));
  ojson b = chat_body(o, std::move(msgs));
  b["tools"] = tool_probe_tools();
  // Ollama's OpenAI layer does not implement tool_choice (docs/DESIGN.md §7.1).
  if (o.dialect.tool_choice == ToolChoice::Supported) b["tool_choice"] = "required";
  b["parallel_tool_calls"] = false;
  return built_request(ProbeKind::ToolCall, o, b);
}

BuiltRequest thinking_request(ChatRequestOptions o, Thinking thinking) {
  o.thinking = thinking;
  return user_only(ProbeKind::Thinking, o, "What is 17 multiplied by 23? Give the number in your answer.");
}

BuiltRequest repetition_request(const ChatRequestOptions& o) {
  return user_only(ProbeKind::Repetition, o,
                   "Describe, in about two hundred words, how a lighthouse keeper might spend an ordinary winter "
                   "day. Write plain prose without lists.");
}

BuiltRequest long_context_request(const ChatRequestOptions& o, const PromptFixture& f, std::string_view nonce) {
  return user_only(ProbeKind::LongContext, o, prompt_with_nonce(f, nonce));
}

BuiltRequest shared_prefix_request(const ChatRequestOptions& o, uint64_t seed, std::string_view session_nonce,
                                   int64_t turn) {
  ojson msgs = ojson::array();
  msgs.push_back(message("system", shared_system_prompt(seed, session_nonce)));
  msgs.push_back(message("user", user_turn(seed, turn)));
  return built_request(ProbeKind::SharedPrefix, o, chat_body(o, std::move(msgs)));
}

BuiltRequest session_request(const ChatRequestOptions& o, ojson messages, const ojson& tools, bool tool_required) {
  ojson b = chat_body(o, std::move(messages));
  b["tools"] = tools;
  if (tool_required && o.dialect.tool_choice == ToolChoice::Supported) b["tool_choice"] = "required";
  b["parallel_tool_calls"] = false;
  return built_request(ProbeKind::Agent, o, b);
}

BuiltRequest burst_request(const ChatRequestOptions& o, int index, std::string_view nonce) {
  return user_only(ProbeKind::Burst, o,
                   "Request " + std::to_string(index) + " (" + std::string(nonce) +
                       "): in three sentences, explain why bridges are inspected regularly.");
}

BuiltRequest cancel_request(const ChatRequestOptions& o, std::string_view nonce) {
  ChatRequestOptions streaming = o;
  streaming.streaming = Streaming::On;  // a cancel needs a stream to cut
  return user_only(ProbeKind::Cancel, streaming,
                   "Session " + std::string(nonce) +
                       ": write a long, detailed story about a journey across a mountain range, chapter by chapter.");
}

BuiltRequest embeddings_request(std::string_view model, const std::vector<std::string>& inputs) {
  ojson b;
  b["model"] = std::string(model);
  b["input"] = inputs;
  BuiltRequest r;
  r.kind = ProbeKind::Embeddings;
  r.path = std::string(kEmbeddingsPath);
  r.body = b.dump(-1, ' ', false, ojson::error_handler_t::replace);
  return r;
}

BuiltRequest rerank_request(std::string_view model, std::string_view query, const std::vector<std::string>& documents) {
  ojson b;
  b["model"] = std::string(model);
  b["query"] = std::string(query);
  b["documents"] = documents;
  b["top_n"] = documents.size();
  BuiltRequest r;
  r.kind = ProbeKind::Rerank;
  r.path = std::string(kRerankPath);
  r.body = b.dump(-1, ' ', false, ojson::error_handler_t::replace);
  return r;
}

}  // namespace soak::probes
