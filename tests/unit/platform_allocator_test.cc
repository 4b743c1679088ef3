// platform/allocator.h on glibc: blocks from the fixed threshold up stay
// mmapped after glibc would have raised its threshold, and trimming hands the
// free heap back to the system. Under AddressSanitizer the allocator is
// ASan's own and these calls do nothing, so the checks run in plain builds
// (the Debug build of the README's dev commands) only; an ASan build reports
// the test skipped (exit 77).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "platform/allocator.h"
#include "tests/catch.h"

#if defined(__GLIBC__)
#define SOAK_TEST_ALLOCATOR 1
#else
#define SOAK_TEST_ALLOCATOR 0
#endif

// AddressSanitizer's runtime, when the program links it (the sanitized build
// links it into every program, though the test files themselves are compiled
// without instrumentation: tests/CMakeLists.txt), defines __asan_init.
extern "C" void __asan_init(void) __attribute__((weak));

namespace {

// Nothing here can be checked: report skipped (exit 77, the SKIP_RETURN_CODE
// of tests/platform.cmake) instead of passing on a warning (docs/DESIGN.md §5.11).
[[noreturn]] void skip(const char* why) {
  std::printf("skipped: %s\n", why);
  std::fflush(stdout);
  std::_Exit(77);
}

#if SOAK_TEST_ALLOCATOR
void require_glibc_allocator() {
  if (__asan_init != nullptr) skip("the allocator is AddressSanitizer's, not glibc's");
}
#endif

}  // namespace

#if SOAK_TEST_ALLOCATOR
namespace {

long resident_kb() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

size_t mmapped_blocks() { return mallinfo2().hblks; }

}  // namespace

TEST_CASE("a freed large block does not raise the mmap threshold: the next one is mmapped too") {
  require_glibc_allocator();
  soak::return_large_blocks_to_the_system();
  const size_t size = 300 * 1024;  // above the fixed threshold, as a 64K-token prompt is
  void* a = std::malloc(size);
  REQUIRE(mmapped_blocks() >= 1);
  std::free(a);  // glibc's dynamic threshold would rise to 300 KB here
  const size_t before = mmapped_blocks();
  void* b = std::malloc(size);
  CHECK(mmapped_blocks() == before + 1);
  std::free(b);
}

TEST_CASE("trimming hands the free heap back even with a live block above it") {
  require_glibc_allocator();
  soak::return_large_blocks_to_the_system();
  std::vector<void*> blocks;
  for (int i = 0; i < 4000; ++i) {  // 16 MB of 4 KB blocks: far below the mmap threshold
    void* p = std::malloc(4096);
    std::memset(p, 1, 4096);
    blocks.push_back(p);
  }
  void* pin = std::malloc(64);  // keeps the heap's top from shrinking by itself
  for (void* p : blocks) std::free(p);
  const long before = resident_kb();
  soak::trim_free_memory();
  const long after = resident_kb();
  INFO("resident before trim " << before << " kB, after " << after << " kB");
  CHECK(before - after > 8 * 1024);
  std::free(pin);
}
#else
TEST_CASE("allocator checks need glibc's own allocator") { skip("the allocator is not glibc's"); }
#endif
