// A plain OpenAI-compatible server: what soakd assumes of a runtime it knows
// nothing else about. Its entry is also the one a table without the
// candidate's runtime falls back to (probes/runtimes/catalog.h).
#include "probes/runtimes/runtime.h"

namespace soak::probes {

// The model list is its health; its build comes from a configured command or
// a fixed string; the answer's model is its own name for what it served; no
// process signature, so its process is found by pid or process_name only.
extern constinit const Runtime kOpenAIRuntime;
constinit const Runtime kOpenAIRuntime{
    .kind = RuntimeKind::OpenAI,
    .notes = "plain OpenAI-compatible server: build from a configured command or a fixed string",
    .health = {"GET", "/v1/models"},
    .models = {"GET", "/v1/models"},
    .identity = IdentityEvidence::ResponseModel,
};

}  // namespace soak::probes
