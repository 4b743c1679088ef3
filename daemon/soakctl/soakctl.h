// soakctl entry point, callable in-process (tests) with its own streams and clock.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/clock.h"

namespace soak {

// Exit codes, documented in `soakctl --help` and the README.
inline constexpr int kCtlExitOk = 0;         // success; for `verdict`: promoted
inline constexpr int kCtlExitRejected = 1;   // `verdict`: rejected
inline constexpr int kCtlExitUsage = 2;      // bad command line (the message names the fix)
inline constexpr int kCtlExitUndecided = 3;  // `verdict`: running, hold, inconclusive, blocked, none yet
inline constexpr int kCtlExitStore = 4;      // store or config missing/unreadable/wrong version, candidate not found
inline constexpr int kCtlExitMismatch = 5;   // `explain`: recomputed verdict differs from the stored one

// argv excludes the program name.
int soakctl_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err, const Clock& clock);

}  // namespace soak
