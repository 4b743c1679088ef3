#include "daemon/host.h"

#include <sys/utsname.h>
#include <unistd.h>
#include <uv.h>

namespace soak {

ThisHost this_host(Sampler& sampler) {
  ThisHost h;
  auto info = sampler.host_info();
  if (info) {
    h.info = *info;
    return h;
  }
  h.warning = "cannot read this host's locator (" + info.message() + "); using uname";
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) == 0) h.info.hostname = name;
  utsname u{};
  if (uname(&u) == 0) {
    h.info.hw_model = u.machine;
    h.info.os_version = std::string(u.sysname) + " " + u.release;
  } else {
    h.info.hw_model = h.info.os_version = "unknown";
  }
  h.info.mem_bytes = static_cast<int64_t>(uv_get_total_memory());
  return h;
}

}  // namespace soak
