#include "daemon/soakd_cli.h"

int main(int argc, char** argv) { return soak::soakd_main(argc, argv); }
