#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "soakctl/soakctl.h"

namespace {

// What standard output is: a terminal and its width, and whether NO_COLOR
// (https://no-color.org: set and not empty) asks for no colour.
soak::Terminal terminal() {
  soak::Terminal t;
  t.is_tty = ::isatty(STDOUT_FILENO) == 1;
  const char* no_color = std::getenv("NO_COLOR");
  t.no_color = no_color && *no_color;
  winsize ws{};
  if (t.is_tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    t.columns = ws.ws_col;
  else if (const char* cols = std::getenv("COLUMNS"); t.is_tty && cols)
    t.columns = std::atoi(cols);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  soak::SystemClock clock;
  return soak::soakctl_main(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr, clock, terminal());
}
