// macOS part of platform/allocator.h: the system allocator hands large blocks
// back to the kernel when they are freed, so there is nothing to tune.
#include "platform/allocator.h"

namespace soak {

void return_large_blocks_to_the_system() {}
void trim_free_memory() {}

}  // namespace soak
