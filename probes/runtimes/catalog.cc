#include "probes/runtimes/catalog.h"

namespace soak::probes {

// Each defined in its own file of this folder.
extern const Runtime kLlamaCppRuntime, kMlxLmRuntime, kOmlxRuntime, kVllmRuntime, kRapidMlxRuntime, kOllamaRuntime,
    kLmStudioRuntime, kOpenAIRuntime;

namespace {

// The one table: a runtime soakd knows is a line here.
constexpr const Runtime* kBuiltin[] = {
    &kLlamaCppRuntime,  // llama_cpp.cc
    &kMlxLmRuntime,     // mlx_lm.cc
    &kOmlxRuntime,      // omlx.cc
    &kVllmRuntime,      // vllm.cc
    &kRapidMlxRuntime,  // rapid_mlx.cc
    &kOllamaRuntime,    // ollama.cc
    &kLmStudioRuntime,  // lm_studio.cc
    &kOpenAIRuntime,    // openai.cc
};

}  // namespace

RuntimeTable builtin_runtimes() { return kBuiltin; }

const Runtime& runtime_in(RuntimeTable table, RuntimeKind kind) {
  for (const Runtime* r : table)
    if (r->kind == kind) return *r;
  return kOpenAIRuntime;
}

const Runtime& builtin_runtime(RuntimeKind kind) { return runtime_in(builtin_runtimes(), kind); }

}  // namespace soak::probes
