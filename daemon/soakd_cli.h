// soakd entry point (the composition root lives in soakd_cli.cc).
#pragma once

namespace soak {
int soakd_main(int argc, char** argv);
}
