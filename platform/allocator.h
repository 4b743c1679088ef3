// How soakd's memory goes back to the system after heavy work (docs/DESIGN.md §4.10).
// A long-context probe builds a prompt of up to a few MB, its JSON
// body and the answer buffers, then frees them; an hour later the next one
// does the same. What matters at rest is that those blocks are returned, not
// kept as the heap's high-water mark.
//
// Linux (glibc): large blocks come from mmap and are unmapped when freed —
// but glibc raises its mmap threshold to the size of the first such block
// freed, after which every later prompt lands in the heap and stays resident.
// Fixing the threshold stops that; per-thread arenas (libuv's pool threads,
// curl's resolver threads) are capped at two. macOS: its allocator returns
// large blocks on free already; nothing to do (allocator_mach.cc).
#pragma once

namespace soak {

// Called once, first thing, by `soakd run`.
void return_large_blocks_to_the_system();

// Hands back the free memory the heap still holds (soakd calls it a second
// after each probe row and task: daemon/probe_task_runner.h DeferredTrim). An
// 80-request burst's buffers are each far below the mmap threshold, and one
// live block at the heap's top keeps all of them resident otherwise (glibc
// malloc_trim, which also releases free pages inside the heap). macOS: nothing.
void trim_free_memory();

}  // namespace soak
