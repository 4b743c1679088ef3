// `soakd init [FILE] [--print] [--ports LIST]`: asks this host's runtimes what
// they serve and writes a commented starter config (daemon/init_config.h).
//
// Ports asked: LIST when given (and nothing else); else the loopback ports
// of every running engine soakd recognises (platform/runtime_processes.h),
// then every runtime's default port; at most kMaxInitPorts, over loopback
// only, each GET bounded (kInitGetTimeoutMs). FILE defaults to
// default_config_path(); it is never overwritten. --print writes to stdout.
//
// Exit codes: 0 written, 1 FILE exists or cannot be written, 2 usage error.
// Threading: runs its own libuv loop on the calling thread until done.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/args.h"
#include "core/types.h"
#include "daemon/init_config.h"
#include "platform/sampler.h"
#include "probes/probe_types.h"

namespace soak {

int cmd_init(const Args& a);

// A port to ask, and what is known of it before asking.
struct InitTarget {
  uint16_t port = 0;
  bool ipv4 = true;                         // asked at 127.0.0.1, else at [::1]
  std::optional<RuntimeKind> process_kind;  // a recognised engine listens there
  std::string process;                      // "llama-server (pid 4242)"
  std::vector<std::string> argv;            // that engine's argv; empty: not known
};

// The ports to ask, in order: `ports` when given (each with the engine that
// listens there, if the sampler recognises one), and nothing else; else each
// recognised engine's loopback ports (Sampler::local_listening_ports), then
// each entry of `table`'s default port not already there (a port is asked
// once per address, 127.0.0.1 or ::1, and once per engine); at most
// kMaxInitPorts. What was looked at, and what could not be, go to `survey`
// (looked_at, notes).
std::vector<InitTarget> init_targets(Sampler& sampler, const std::optional<std::vector<uint16_t>>& ports,
                                     probes::RuntimeTable table, InitSurvey& survey);

}  // namespace soak
