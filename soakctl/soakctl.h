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

// What soakctl's standard output is: a terminal (of this many columns; 0 when
// unknown) or not, and whether NO_COLOR asks for no colour. soakctl/main.cc
// finds out; tests pass their own. Colour only on a terminal, never with NO_COLOR.
struct Terminal {
  bool is_tty = false;
  int columns = 0;
  bool no_color = false;
};
// The width `soakctl status` fits when the terminal's is not known (or when piped).
inline constexpr int kDefaultColumns = 80;

// argv excludes the program name.
int soakctl_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err, const Clock& clock,
                 const Terminal& terminal = {});

}  // namespace soak
