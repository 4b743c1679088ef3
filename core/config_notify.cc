// The "notify" block (docs/DESIGN.md §4.11): the command soakd runs on every
// verdict, as an argv without a shell, and its time bound.
#include "core/config_schema.h"
#include "core/duration.h"

namespace soak::schema {

namespace {

constexpr const char* kCommandExample = "[\"osascript\", \"-e\", \"display notification \\\"verdict\\\"\"]";

void read_command(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, NotifySettings& s) {
  if (!v.is_array() || v.empty()) {
    ctx.err(p, "must be a non-empty array of strings: the program and its arguments, run without a shell", ex);
    return;
  }
  std::vector<std::string> argv;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string ip = index_path(p, i);
    if (!v[i].is_string()) {
      ctx.err(ip, std::string("must be a string, not ") + json_type_name(v[i]), "\"--data-binary\"");
      return;
    }
    std::string a = v[i].get<std::string>();
    if (i == 0 && a.empty()) {
      ctx.err(ip, "must be the program: a name looked up in PATH or a path (relative to the config file)",
              "\"osascript\"");
      return;
    }
    if (i == 0 && a.find('/') != std::string::npos) a = resolve_path(ctx, a);
    argv.push_back(std::move(a));
  }
  s.command = std::move(argv);
}

void read_timeout(ReadContext& ctx, const json& v, const std::string& p, const std::string& ex, NotifySettings& s) {
  int64_t ms = 0;
  if (!read_duration(ctx, v, p, ms, ex, Zero::Reject)) return;
  if (ms > kMaxNotifyTimeoutMs) {
    ctx.err(p,
            "is " + format_duration(ms) + ", longer than " + format_duration(kMaxNotifyTimeoutMs) +
                ": soakd's graceful stop waits for the command, and launchd's ExitTimeOut bounds that stop; hand "
                "longer work to a job of its own",
            ex);
    return;
  }
  s.timeout_ms = ms;
}

}  // namespace

const Section<NotifySettings>& notify_section() {
  using S = NotifySettings;
  static const Section<S> s{"{\"command\": " + std::string(kCommandExample) + ", \"timeout\": \"30s\"}",
                            {
                                required(custom<S>("command", Kind::List, kCommandExample, read_command)),
                                custom<S>("timeout", Kind::Duration, "\"30s\"", read_timeout),
                            }};
  return s;
}

}  // namespace soak::schema
