// The launchd property lists, as install.sh renders them, are valid XML
// plists with the keys and types launchd expects. A converter (plistutil from
// libplist-utils here, plutil on macOS) must read them back to the same values.
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <variant>
#include <vector>

#include "core/launch.h"
#include "daemon/daemon.h"
#include "tests/catch.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

using namespace soak;

namespace {

// ---- a strict reader for the XML plist subset launchd jobs use -------------
struct PValue;
using PDict = std::map<std::string, PValue>;
using PArray = std::vector<PValue>;
struct PValue {
  std::variant<std::string, int64_t, bool, std::shared_ptr<PDict>, std::shared_ptr<PArray>> v;
  std::string type;  // "string" | "integer" | "bool" | "dict" | "array"
};

class PlistReader {
 public:
  explicit PlistReader(std::string s) : s_(std::move(s)) {}

  PValue read_document() {
    skip_prolog();
    expect("<plist");
    skip_to('>');
    PValue v = value();
    skip_ws();
    expect("</plist>");
    skip_ws();
    if (i_ != s_.size()) fail("trailing content");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw std::runtime_error("plist: " + why + " at offset " + std::to_string(i_));
  }
  void skip_ws() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
        ++i_;
      } else if (s_.compare(i_, 4, "<!--") == 0) {
        auto e = s_.find("-->", i_);
        if (e == std::string::npos) fail("unterminated comment");
        i_ = e + 3;
      } else {
        break;
      }
    }
  }
  void skip_prolog() {
    skip_ws();
    while (s_.compare(i_, 2, "<?") == 0 || s_.compare(i_, 9, "<!DOCTYPE") == 0) {
      skip_to('>');
      skip_ws();
    }
  }
  void skip_to(char c) {
    auto e = s_.find(c, i_);
    if (e == std::string::npos) fail(std::string("missing '") + c + "'");
    i_ = e + 1;
  }
  void expect(const std::string& tok) {
    skip_ws();
    if (s_.compare(i_, tok.size(), tok) != 0) fail("expected " + tok);
    i_ += tok.size();
  }
  std::string text_until(const std::string& close) {
    auto e = s_.find(close, i_);
    if (e == std::string::npos) fail("missing " + close);
    std::string raw = s_.substr(i_, e - i_);
    i_ = e + close.size();
    std::string out;
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '<') fail("markup inside text");
      if (raw[k] != '&') {
        out += raw[k];
        continue;
      }
      static const std::pair<const char*, char> kEnt[] = {
          {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
      bool ok = false;
      for (auto [name, ch] : kEnt) {
        if (raw.compare(k, std::strlen(name), name) == 0) {
          out += ch;
          k += std::strlen(name) - 1;
          ok = true;
          break;
        }
      }
      if (!ok) fail("bad entity");
    }
    return out;
  }
  PValue value() {
    skip_ws();
    PValue v;
    if (s_.compare(i_, 8, "<string>") == 0) {
      i_ += 8;
      v.v = text_until("</string>");
      v.type = "string";
    } else if (s_.compare(i_, 9, "<integer>") == 0) {
      i_ += 9;
      std::string t = text_until("</integer>");
      size_t used = 0;
      v.v = static_cast<int64_t>(std::stoll(t, &used));
      if (used != t.size()) fail("bad integer");
      v.type = "integer";
    } else if (s_.compare(i_, 7, "<true/>") == 0) {
      i_ += 7;
      v.v = true;
      v.type = "bool";
    } else if (s_.compare(i_, 8, "<false/>") == 0) {
      i_ += 8;
      v.v = false;
      v.type = "bool";
    } else if (s_.compare(i_, 6, "<dict>") == 0) {
      i_ += 6;
      auto d = std::make_shared<PDict>();
      while (true) {
        skip_ws();
        if (s_.compare(i_, 7, "</dict>") == 0) {
          i_ += 7;
          break;
        }
        expect("<key>");
        std::string k = text_until("</key>");
        if (d->count(k)) fail("duplicate key " + k);
        (*d)[k] = value();
      }
      v.v = d;
      v.type = "dict";
    } else if (s_.compare(i_, 7, "<array>") == 0) {
      i_ += 7;
      auto a = std::make_shared<PArray>();
      while (true) {
        skip_ws();
        if (s_.compare(i_, 8, "</array>") == 0) {
          i_ += 8;
          break;
        }
        a->push_back(value());
      }
      v.v = a;
      v.type = "array";
    } else {
      fail("unexpected element");
    }
    return v;
  }

  std::string s_;
  size_t i_ = 0;
};

bool same(const PValue& a, const PValue& b) {
  if (a.type != b.type) return false;
  if (a.type == "dict") {
    const auto& x = *std::get<std::shared_ptr<PDict>>(a.v);
    const auto& y = *std::get<std::shared_ptr<PDict>>(b.v);
    if (x.size() != y.size()) return false;
    for (const auto& [k, v] : x)
      if (!y.count(k) || !same(v, y.at(k))) return false;
    return true;
  }
  if (a.type == "array") {
    const auto& x = *std::get<std::shared_ptr<PArray>>(a.v);
    const auto& y = *std::get<std::shared_ptr<PArray>>(b.v);
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same(x[i], y[i])) return false;
    return true;
  }
  return a.v == b.v;
}

const PDict& dict(const PValue& v) { return *std::get<std::shared_ptr<PDict>>(v.v); }
const PArray& array(const PValue& v) { return *std::get<std::shared_ptr<PArray>>(v.v); }
const std::string& str(const PValue& v) { return std::get<std::string>(v.v); }

// Keys a launchd job may carry (launchd.plist(5)); anything else is a typo.
const std::set<std::string> kLaunchdKeys{
    "Label",         "UserName",           "GroupName",         "ProgramArguments",  "Program",
    "RunAtLoad",     "KeepAlive",          "ThrottleInterval",  "ExitTimeOut",       "ProcessType",
    "LowPriorityIO", "WorkingDirectory",   "StandardOutPath",   "StandardErrorPath", "EnvironmentVariables",
    "Nice",          "SoftResourceLimits", "HardResourceLimits"};

std::string render(const std::string& kind_flag, const std::string& config) {
  std::vector<std::string> argv{"/bin/sh",
                                std::string(SOAKD_SOURCE_DIR) + "/launchd/install.sh",
                                "render",
                                "--bin",
                                "/opt/homebrew/bin/soakd",
                                "--config",
                                config,
                                "--user",
                                "op"};
  if (!kind_flag.empty()) argv.push_back(kind_flag);
  auto r = run_program(argv, 10'000);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

std::string find_converter() {
  for (const char* p :
       {"/usr/bin/plistutil", "/usr/local/bin/plistutil", "/opt/homebrew/bin/plistutil", "/usr/bin/plutil"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

// XML -> binary -> XML through the system's converter.
std::string round_trip(const std::string& xml) {
  std::string conv = find_converter();
  REQUIRE_FALSE(conv.empty());  // CI installs libplist-utils; macOS ships plutil
  TempDir tmp;
  std::string in = tmp.path() + "/in.plist", bin = tmp.path() + "/x.bin", out = tmp.path() + "/out.plist";
  std::ofstream(in) << xml;
  if (conv.find("plutil") != std::string::npos && conv.find("plistutil") == std::string::npos) {
    REQUIRE(run_program({conv, "-lint", in}, 10'000).exit_code == 0);
    REQUIRE(run_program({conv, "-convert", "binary1", "-o", bin, in}, 10'000).exit_code == 0);
    REQUIRE(run_program({conv, "-convert", "xml1", "-o", out, bin}, 10'000).exit_code == 0);
  } else {
    REQUIRE(run_program({conv, "-i", in, "-f", "bin", "-o", bin}, 10'000).exit_code == 0);
    REQUIRE(run_program({conv, "-i", bin, "-f", "xml", "-o", out}, 10'000).exit_code == 0);
  }
  std::ifstream f(out);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void check_job(const PValue& root, bool is_daemon, const std::string& config) {
  REQUIRE(root.type == "dict");
  const auto& d = dict(root);
  for (const auto& [k, v] : d) {
    INFO("key " << k);
    CHECK(kLaunchdKeys.count(k) == 1);
  }
  CHECK(str(d.at("Label")) == "org.soakd.soakd");
  const auto& args = array(d.at("ProgramArguments"));
  REQUIRE(args.size() == 4);
  for (const auto& a : args) CHECK(a.type == "string");
  CHECK(str(args[0]) == "/opt/homebrew/bin/soakd");
  CHECK(str(args[1]) == "run");
  CHECK(str(args[2]) == "--config");
  CHECK(str(args[3]) == config);
  CHECK(d.at("RunAtLoad").type == "bool");
  // Restart on crash, not after a clean exit.
  REQUIRE(d.at("KeepAlive").type == "dict");
  const auto& ka = dict(d.at("KeepAlive"));
  REQUIRE(ka.at("SuccessfulExit").type == "bool");
  CHECK(std::get<bool>(ka.at("SuccessfulExit").v) == false);
  REQUIRE(d.at("ThrottleInterval").type == "integer");
  CHECK(std::get<int64_t>(d.at("ThrottleInterval").v) >= 10);
  // ExitTimeOut must leave room for the graceful stop before launchd sends SIGKILL.
  REQUIRE(d.at("ExitTimeOut").type == "integer");
  CHECK(std::get<int64_t>(d.at("ExitTimeOut").v) * 1000 > kStopGraceMs);
  // ... and for managed runtimes stopped within it (default stop_timeout): the value
  // soakd check-config compares a config's stop_timeouts with.
  CHECK(std::get<int64_t>(d.at("ExitTimeOut").v) * 1000 == kLaunchdExitTimeOutMs);
  CHECK(kLaunchdExitTimeOutMs > kStopGraceMs + kDefaultStopTimeoutMs);
  // No ProcessType (or Background/Adaptive) would throttle a latency-measuring daemon.
  CHECK(str(d.at("ProcessType")) == "Interactive");
  CHECK(str(d.at("StandardOutPath")).find("/Library/Logs/soakd/") != std::string::npos);
  CHECK(str(d.at("StandardErrorPath")).find("/Library/Logs/soakd/") != std::string::npos);
  CHECK(str(d.at("WorkingDirectory")).find("/Library/Application Support/soakd") != std::string::npos);
  if (is_daemon) {
    CHECK(str(d.at("UserName")) == "op");
    CHECK(dict(d.at("EnvironmentVariables")).count("HOME") == 1);
  } else {
    CHECK(d.count("UserName") == 0);
  }
}

}  // namespace

TEST_CASE("the LaunchAgent and LaunchDaemon plists are valid and carry what launchd expects") {
  const std::string config = "/Users/op/Library/Application Support/soakd/a&b <prod>.json";
  for (bool is_daemon : {false, true}) {
    INFO((is_daemon ? "daemon" : "agent"));
    std::string xml = render(is_daemon ? "--daemon" : "", config);
    CHECK(xml.find('@') == std::string::npos);  // every placeholder filled
    PValue root = PlistReader(xml).read_document();
    check_job(root, is_daemon, config);
    PValue again = PlistReader(round_trip(xml)).read_document();
    CHECK(same(root, again));
  }
}

TEST_CASE("the plist reader used above rejects malformed plists") {
  CHECK_THROWS(PlistReader("<plist><dict><key>a</key></dict></plist>").read_document());
  CHECK_THROWS(PlistReader("<plist><dict><key>a</key><integer>x</integer></dict></plist>").read_document());
  CHECK_THROWS(PlistReader("<plist><dict><key>a</key><string>a & b</string></dict></plist>").read_document());
  CHECK_THROWS(PlistReader("<plist><dict><key>a</key><true/><key>a</key><true/></dict></plist>").read_document());
}

TEST_CASE("install.sh refuses unknown options and explains itself") {
  auto bad =
      run_program({"/bin/sh", std::string(SOAKD_SOURCE_DIR) + "/launchd/install.sh", "install", "--frob"}, 10'000);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("unknown option --frob") != std::string::npos);
  auto help = run_program({"/bin/sh", std::string(SOAKD_SOURCE_DIR) + "/launchd/install.sh", "--help"}, 10'000);
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("launchctl bootstrap") != std::string::npos);
}
