#include <iostream>

#include "daemon/soakctl/soakctl.h"

int main(int argc, char** argv) {
  soak::SystemClock clock;
  return soak::soakctl_main(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr, clock);
}
