// The table of runtimes soakd knows (catalog.cc, one line per runtime), and
// how a candidate's RuntimeKind finds its entry in a table. The probe engine
// takes a table through EngineOptions::runtimes (empty: this one), so a test
// can hand it a runtime of its own; the composition root builds the process
// signatures from the same table (daemon/wiring.h runtime_signatures()).
//
// Constant data; thread-agnostic.
#pragma once

#include "core/types.h"
#include "probes/probe_types.h"
#include "probes/runtimes/runtime.h"

namespace soak::probes {

// Every built-in runtime's entry, each once.
RuntimeTable builtin_runtimes();

// The entry of `kind` in `table`; the plain OpenAI-compatible entry when the
// table has none (what soakd assumes of a runtime it knows nothing about).
const Runtime& runtime_in(RuntimeTable table, RuntimeKind kind);

// runtime_in(builtin_runtimes(), kind).
const Runtime& builtin_runtime(RuntimeKind kind);

}  // namespace soak::probes
