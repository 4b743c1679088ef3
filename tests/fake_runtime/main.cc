// soak-fake-runtime: the fake runtime as a program (demo, child-process tests).
#include <signal.h>

#include <iostream>

#include "tests/fake_runtime/cli.h"
#include "tests/fake_runtime/fake_runtime.h"

using namespace soak::fake;

int main(int argc, char** argv) {
  auto opts = parse_cli(std::vector<std::string>(argv + 1, argv + argc));
  if (!opts.ok()) {
    std::cerr << "soak-fake-runtime: " << opts.message() << "\n";
    return 2;
  }
  if (opts->help) {
    std::cout << usage_text();
    return 0;
  }
  std::vector<ListenerConfig> listeners = opts->listeners;
  if (!opts->config_path.empty()) {
    auto from_file = load_config_file(opts->config_path);
    if (!from_file.ok()) {
      std::cerr << "soak-fake-runtime: " << from_file.message() << "\n";
      return 2;
    }
    // Config listeners come first so SIGHUP can match them by index.
    listeners.insert(listeners.begin(), from_file->begin(), from_file->end());
  }

  // Signals are taken synchronously by this thread; the loop thread inherits the mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&sigs, s);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  FakeRuntime runtime(listeners, CrashMode::KillProcess);
  if (auto st = runtime.start(); !st.ok()) {
    std::cerr << "soak-fake-runtime: " << st.message() << "\n";
    return 1;
  }
  for (size_t i = 0; i < runtime.size(); ++i)
    std::cout << "listening on " << listeners[i].host << ":" << runtime.port(i) << "\n";
  std::cout.flush();

  for (int sig = 0; sigwait(&sigs, &sig) == 0 && sig == SIGHUP;) {
    if (opts->config_path.empty()) continue;
    auto fresh = load_config_file(opts->config_path);
    if (!fresh.ok()) {
      std::cerr << "soak-fake-runtime: SIGHUP: " << fresh.message() << "\n";
      continue;
    }
    for (size_t i = 0; i < fresh->size() && i < runtime.size(); ++i) {
      runtime.set_build(i, (*fresh)[i].knobs.build);
      runtime.set_scenario(i, (*fresh)[i].scenario);
    }
  }
  runtime.stop();
  return 0;
}
