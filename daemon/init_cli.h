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

#include "core/args.h"

namespace soak {

int cmd_init(const Args& a);

}  // namespace soak
