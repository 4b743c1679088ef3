#include "core/launch.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace soak {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> words(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : lower(name)) {
    if (c == '-' || c == '_' || c == '.') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::optional<uint16_t> to_port(std::string_view s) {
  if (s.empty() || s.size() > 5 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  const int n = std::stoi(std::string(s));
  if (n < 1 || n > 65535) return std::nullopt;
  return static_cast<uint16_t>(n);
}

// "host:port" (IPv4 or a name), "[v6]:port"; a bare IPv6 address has no port.
std::optional<uint16_t> port_of_host(std::string_view h) {
  if (!h.empty() && h.front() == '[') {
    auto close = h.find(']');
    if (close == std::string_view::npos || close + 1 >= h.size() || h[close + 1] != ':') return std::nullopt;
    return to_port(h.substr(close + 2));
  }
  auto colon = h.find(':');
  if (colon == std::string_view::npos || h.find(':', colon + 1) != std::string_view::npos) return std::nullopt;
  return to_port(h.substr(colon + 1));
}

}  // namespace

bool names_a_secret(std::string_view name) {
  // The last word names what the value is: "--api-key", "HF_TOKEN" hold one;
  // "--token-interval-ms", "--ssl-key-file", "TOKENIZERS_PARALLELISM" do not.
  const auto ws = words(name);
  if (ws.empty()) return false;
  for (const char* s : {"key", "token", "secret", "password", "passwd", "apikey"})
    if (ws.back() == s) return true;
  return false;
}

std::vector<std::string> literal_argv(const LaunchSpec& s) {
  std::vector<std::string> out;
  for (const auto& a : s.argv) out.push_back(a.from_env.empty() ? a.text : std::string());
  return out;
}

std::vector<std::string> display_argv(const LaunchSpec& s) {
  std::vector<std::string> out;
  for (const auto& a : s.argv) out.push_back(a.from_env.empty() ? a.text : "${" + a.from_env + "}");
  return out;
}

std::string argv_json(const LaunchSpec& s) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& a : s.argv) {
    if (a.from_env.empty())
      arr.push_back(a.text);
    else
      arr.push_back({{"from_env", a.from_env}});
  }
  return arr.dump();
}

std::vector<ArgvPort> argv_ports(const LaunchSpec& s, RuntimeKind runtime) {
  std::vector<ArgvPort> out;
  const auto args = literal_argv(s);
  auto add = [&](std::optional<uint16_t> p, std::string flag) {
    if (p) out.push_back(ArgvPort{*p, std::move(flag)});
  };
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string next = i + 1 < args.size() ? args[i + 1] : std::string();
    auto eq = a.find('=');
    const std::string opt = a.substr(0, eq);
    const std::string val = eq == std::string::npos ? next : a.substr(eq + 1);
    const std::string shown = eq == std::string::npos ? a + " " + next : a;
    // llama-server's -p is --prompt (common/arg.cpp {"-p", "--prompt"}), not a
    // port. This one runtime fact stays here, not in its entry
    // (probes/runtimes/llama_cpp.cc): the check runs when the config is read,
    // in core, below the probes that hold the entries.
    if (opt == "--port" || (opt == "-p" && runtime != RuntimeKind::LlamaCpp))
      add(to_port(val), shown);
    else if (opt == "--host")
      add(port_of_host(val), shown);
  }
  for (const char* name : {"LLAMA_ARG_PORT", "OLLAMA_HOST"}) {
    auto it = s.env.find(name);
    if (it == s.env.end() || !it->second.from_env.empty()) continue;
    const std::string& v = it->second.text;
    add(std::string(name) == "OLLAMA_HOST" ? port_of_host(v) : to_port(v), "env " + std::string(name) + "=" + v);
  }
  return out;
}

}  // namespace soak
