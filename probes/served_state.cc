#include "probes/served_state.h"

#include <nlohmann/json.hpp>

#include "probes/json_fields.h"
#include "probes/runtimes/catalog.h"
#include "probes/text_util.h"

namespace soak::probes {
namespace {

using jsonf::json;
using ojson = nlohmann::ordered_json;

constexpr size_t kMaxShownIds = 5;

// The first few ids, each cut to `width` characters, then "..." when there are more.
std::string joined_ids(const std::vector<std::string>& ids, size_t width) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < kMaxShownIds; ++i) out += (i ? ", " : "") + text::excerpt(ids[i], width);
  if (ids.size() > kMaxShownIds) out += ", ...";
  return out;
}

std::string listed(const std::vector<std::string>& ids) { return ids.empty() ? "none" : joined_ids(ids, 80); }

}  // namespace

void ServedState::add_loaded(const std::string& id) {
  if (id.empty()) return;
  for (const auto& x : loaded)
    if (x == id) return;
  loaded.push_back(id);
}

void LaunchFingerprint::add_source(std::string_view route) {
  if (!source.empty()) source += " + ";
  source += route;
}

std::string_view to_string(IdentityProof p) {
  switch (p) {
    case IdentityProof::ServedDigest: return "served digest";
    case IdentityProof::ServedName: return "served name";
    case IdentityProof::LoadedState: return "loaded state";
    case IdentityProof::ProcessArgv: return "runtime argv";
    case IdentityProof::EchoOnly: return "echo only";
  }
  return "?";
}

std::string LaunchFingerprint::to_json() const {
  if (empty() && !speculative && !max_tokens_default && !cache_ram_mib) return "";
  ojson j = ojson::object();
  if (!model.empty()) j["model"] = model;
  if (ctx_per_slot) j["ctx_per_slot"] = *ctx_per_slot;
  if (ctx_total) j["ctx_total"] = *ctx_total;
  if (slots) j["slots"] = *slots;
  if (!kv_cache_type.empty()) j["kv_cache_type"] = kv_cache_type;
  if (speculative) j["speculative"] = *speculative;
  if (max_tokens_default) j["max_tokens_default"] = *max_tokens_default;
  if (cache_ram_mib) j["cache_ram_mib"] = *cache_ram_mib;
  return j.dump();
}

std::string LaunchFingerprint::summary() const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (ctx_per_slot) {
    std::string c = "ctx " + std::to_string(*ctx_per_slot) + "/slot";
    if (ctx_total) c += " (" + std::to_string(*ctx_total) + " total)";
    add(c);
  }
  if (slots) add(std::to_string(*slots) + " slot" + (*slots == 1 ? "" : "s"));
  if (!kv_cache_type.empty()) add("kv " + kv_cache_type);
  if (speculative) add(*speculative ? "speculative" : "no draft");
  if (max_tokens_default)
    add("max_tokens default " +
        (*max_tokens_default < 0 ? std::string("unlimited") : std::to_string(*max_tokens_default)));
  if (cache_ram_mib)
    add("prompt cache " + (*cache_ram_mib < 0    ? std::string("unlimited")
                           : *cache_ram_mib == 0 ? std::string("off")
                                                 : std::to_string(*cache_ram_mib) + " MiB"));
  if (!model.empty()) add("model " + text::excerpt(model, 80));
  return out.empty() ? "not exposed" : out;
}

FingerprintComparison compare_fingerprints(const LaunchFingerprint& was, const LaunchFingerprint& now) {
  FingerprintComparison c;
  c.merged = was;
  auto text = [&](const std::string& a, const std::string& b, std::string& into) {
    if (!a.empty() && !b.empty() && a != b) c.changed = true;
    if (into.empty()) into = b;
  };
  auto value = [&](const auto& a, const auto& b, auto& into) {
    if (a && b && *a != *b) c.changed = true;
    if (!into) into = b;
  };
  text(was.model, now.model, c.merged.model);
  text(was.kv_cache_type, now.kv_cache_type, c.merged.kv_cache_type);
  value(was.ctx_per_slot, now.ctx_per_slot, c.merged.ctx_per_slot);
  value(was.ctx_total, now.ctx_total, c.merged.ctx_total);
  value(was.slots, now.slots, c.merged.slots);
  value(was.speculative, now.speculative, c.merged.speculative);
  value(was.max_tokens_default, now.max_tokens_default, c.merged.max_tokens_default);
  value(was.cache_ram_mib, now.cache_ram_mib, c.merged.cache_ram_mib);
  if (c.changed) c.merged = now;
  return c;
}

Result<LaunchFingerprint> parse_fingerprint_json(std::string_view text) {
  LaunchFingerprint f;
  if (text::trim(text).empty()) return f;
  json j = jsonf::parse_object(text);
  if (j.is_null()) return make_error("launch fingerprint is not a JSON object: " + text::excerpt(text, 80));
  f.model = jsonf::get_string(j, "model").value_or("");
  f.ctx_per_slot = jsonf::get_int(j, "ctx_per_slot");
  f.ctx_total = jsonf::get_int(j, "ctx_total");
  f.slots = jsonf::get_int(j, "slots");
  f.kv_cache_type = jsonf::get_string(j, "kv_cache_type").value_or("");
  f.speculative = jsonf::get_bool(j, "speculative");
  f.max_tokens_default = jsonf::get_int(j, "max_tokens_default");
  f.cache_ram_mib = jsonf::get_int(j, "cache_ram_mib");
  return f;
}

RuntimeArgv runtime_argv_of(const CandidateConfig& c, const RuntimeArgvReader& reader) {
  RuntimeArgv a;
  if (c.launch) {
    a.argv = launch_argv_of(c);
    return a;
  }
  if (reader)
    a = reader(c);
  else
    a.error = "this soakd cannot discover runtime processes";
  if (a.error.empty() && a.argv.empty()) a.error = "its process's argv is empty (not visible to this user?)";
  return a;
}

std::vector<std::string> launch_argv_of(const CandidateConfig& c) {
  if (!c.launch) return {};
  std::vector<std::string> args = literal_argv(*c.launch);
  const Runtime& rt = builtin_runtime(c.runtime);
  if (rt.argv_from_env && !args.empty()) {
    const auto flags = rt.argv_from_env(*c.launch);
    args.insert(args.begin() + 1, flags.begin(), flags.end());
  }
  return args;
}

Verdict judge_served(const ServedState& s, std::string_view config_model, std::string_view expected_model) {
  const std::string how = std::string(to_string(s.proof));
  if (s.proof == IdentityProof::EchoOnly) {
    std::string d =
        "identity: echo only - the runtime's answers repeat the requested model and nothing it exposes names "
        "the loaded weights";
    if (!s.unproven_reason.empty()) d += " (" + s.unproven_reason + ")";
    return {Outcome::IdentityUnproven, d};
  }
  bool found = false;
  for (const auto& id : s.loaded) found = found || id == config_model;
  if (s.proof == IdentityProof::ProcessArgv && !found) {
    return {
        Outcome::IdentityMismatch,
        "config model '" + text::excerpt(config_model, 100) + "' is not the runtime's --model '" +
            text::excerpt(s.fingerprint.model, 100) +
            "': MLX-LM would load other weights for that request string; set the config model to the --model value"};
  }
  if (!found) {
    return {Outcome::IdentityMismatch, "'" + text::excerpt(config_model, 100) + "' is not what the runtime serves (" +
                                           how + " from " + s.fingerprint.source + "; loaded: " + listed(s.loaded) +
                                           ")"};
  }
  if (!expected_model.empty() && s.fingerprint.model != expected_model) {
    return {Outcome::IdentityMismatch, "weights changed since this build was registered: " + how + " was '" +
                                           text::excerpt(expected_model, 100) + "', now '" +
                                           text::excerpt(s.fingerprint.model, 100) + "'"};
  }
  std::string detail = "identity: " + how + " (" + s.fingerprint.source;
  if (!s.served_digest.empty()) detail += " digest " + text::excerpt(s.served_digest, 24);
  return {Outcome::Clean, detail + ")"};
}

std::vector<std::string> parse_model_ids(std::string_view body) {
  json j = jsonf::parse_object(body);
  std::vector<std::string> ids;
  auto add = [&](const std::string& s) {
    if (s.empty()) return;
    for (const auto& x : ids)
      if (x == s) return;
    ids.push_back(s);
  };
  if (const json* data = jsonf::array_member(j, "data")) {
    for (const auto& m : *data) {
      if (auto id = jsonf::get_string(m, "id")) add(*id);
      if (const json* al = jsonf::array_member(m, "aliases"))
        for (const auto& a : *al)
          if (a.is_string()) add(a.get<std::string>());
    }
  }
  if (const json* models = jsonf::array_member(j, "models")) {
    for (const auto& m : *models) {
      if (auto n = jsonf::get_string(m, "name")) add(*n);
      if (auto n = jsonf::get_string(m, "model")) add(*n);
    }
  }
  return ids;
}

Verdict check_model_list(const std::vector<std::string>& ids, std::string_view canonical_model) {
  for (const auto& id : ids)
    if (id == canonical_model) return {Outcome::Clean, ""};
  return {Outcome::IdentityMismatch, "canonical id '" + text::excerpt(canonical_model, 100) +
                                         "' is not in the model list" +
                                         (ids.empty() ? " (empty)" : ": " + joined_ids(ids, 60))};
}

}  // namespace soak::probes
