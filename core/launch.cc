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

namespace {

// Where a launch block gives the runtime its port: an argv value ("--port",
// "8081"), a joined one ("--port=8081"), or an environment variable; `host`
// when the value is HOST:PORT.
struct PortSite {
  enum class Where { Argv, Env } where = Where::Argv;
  size_t index = 0;   // Argv: the element holding the value
  std::string env;    // Env: the variable
  std::string opt;    // Argv: "--port=" when the value is joined to its option, else ""
  bool host = false;  // the value is HOST:PORT
  ArgvPort port;
};

std::vector<PortSite> port_sites(const LaunchSpec& s, RuntimeKind runtime) {
  std::vector<PortSite> out;
  const auto args = literal_argv(s);
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string next = i + 1 < args.size() ? args[i + 1] : std::string();
    auto eq = a.find('=');
    const std::string opt = a.substr(0, eq);
    const bool joined = eq != std::string::npos;
    const std::string val = joined ? a.substr(eq + 1) : next;
    const std::string shown = joined ? a : a + " " + next;
    // llama-server's -p is --prompt (common/arg.cpp {"-p", "--prompt"}), not a
    // port. This one runtime fact stays here, not in its entry
    // (probes/runtimes/llama_cpp.cc): the check runs when the config is read,
    // in core, below the probes that hold the entries.
    const bool port_opt = opt == "--port" || (opt == "-p" && runtime != RuntimeKind::LlamaCpp);
    if (!port_opt && opt != "--host") continue;
    const auto p = port_opt ? to_port(val) : port_of_host(val);
    if (!p) continue;
    PortSite site;
    site.index = joined ? i : i + 1;
    site.opt = joined ? opt + "=" : "";
    site.host = !port_opt;
    site.port = ArgvPort{*p, shown};
    out.push_back(std::move(site));
  }
  for (const char* name : {"LLAMA_ARG_PORT", "OLLAMA_HOST"}) {
    auto it = s.env.find(name);
    if (it == s.env.end() || !it->second.from_env.empty()) continue;
    const std::string& v = it->second.text;
    const bool host = std::string(name) == "OLLAMA_HOST";
    const auto p = host ? port_of_host(v) : to_port(v);
    if (!p) continue;
    PortSite site;
    site.where = PortSite::Where::Env;
    site.env = name;
    site.host = host;
    site.port = ArgvPort{*p, "env " + std::string(name) + "=" + v};
    out.push_back(std::move(site));
  }
  return out;
}

// `value` (a port, or HOST:PORT when `host`) with its port replaced.
std::string replaced_port(const std::string& value, bool host, uint16_t port) {
  if (!host) return std::to_string(port);
  return value.substr(0, value.rfind(':') + 1) + std::to_string(port);
}

}  // namespace

std::vector<ArgvPort> argv_ports(const LaunchSpec& s, RuntimeKind runtime) {
  std::vector<ArgvPort> out;
  for (auto& site : port_sites(s, runtime)) out.push_back(std::move(site.port));
  return out;
}

LaunchSpec with_port(const LaunchSpec& s, RuntimeKind runtime, uint16_t port) {
  LaunchSpec out = s;
  for (const auto& site : port_sites(s, runtime)) {
    if (site.where == PortSite::Where::Env) {
      std::string& v = out.env[site.env].text;
      v = replaced_port(v, site.host, port);
      continue;
    }
    std::string& a = out.argv[site.index].text;
    a = site.opt + replaced_port(a.substr(site.opt.size()), site.host, port);
  }
  return out;
}

std::optional<std::string> launch_interpreter(const LaunchSpec& s) {
  if (s.argv.empty()) return std::nullopt;
  const std::string& a = s.argv.front().text;
  const std::string base = a.substr(a.rfind('/') == std::string::npos ? 0 : a.rfind('/') + 1);
  // python, python3, python3.12; the launchers that run a package's entry point.
  const bool python = base.rfind("python", 0) == 0 && std::all_of(base.begin() + 6, base.end(), [](char c) {
                        return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
                      });
  for (const char* n : {"uv", "uvx", "pipx", "env", "sh", "bash", "zsh", "node", "npx", "bun", "deno"})
    if (base == n) return base;
  if (python) return base;
  return std::nullopt;
}

std::string url_with_port(const std::string& base_url, uint16_t port) {
  // scheme://host[:port][/prefix]; a bracketed IPv6 host keeps its brackets.
  const auto scheme_end = base_url.find("://");
  const size_t host_at = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const size_t path_at = std::min(base_url.find('/', host_at), base_url.size());
  std::string host = base_url.substr(host_at, path_at - host_at);
  const auto close = host.rfind(']');
  const auto colon = host.rfind(':');
  if (colon != std::string::npos && (close == std::string::npos || colon > close)) host.resize(colon);
  return base_url.substr(0, host_at) + host + ":" + std::to_string(port) + base_url.substr(path_at);
}

std::string previous_runtime_name(const std::string& name) { return name + std::string(kPreviousRuntimeSuffix); }

}  // namespace soak
