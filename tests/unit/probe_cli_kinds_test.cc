// `soakd probe --kind all` runs what a candidate's own stages would run: every
// kind for a chat runtime, the pooling kinds (never a chat kind) for an
// embedding or rerank server (docs/DESIGN.md §2.14).
#include <algorithm>

#include "daemon/probe_cli.h"
#include "probes/engine.h"
#include "tests/catch.h"

using namespace soak;

namespace {
bool is_chat_kind(ProbeKind k) {
  return k != ProbeKind::Health && k != ProbeKind::Scrape && k != ProbeKind::Embeddings && k != ProbeKind::Rerank &&
         k != ProbeKind::Burst;
}
}  // namespace

TEST_CASE("probe --kind all: every kind for a chat runtime") {
  CHECK(all_kinds_for(WorkloadKind::Chat) == probes::all_probe_kinds());
}

TEST_CASE("probe --kind all: an embedding or rerank server gets its pooling kinds and no chat kind") {
  CHECK(all_kinds_for(WorkloadKind::Embedding) ==
        std::vector<ProbeKind>{ProbeKind::Health, ProbeKind::Embeddings, ProbeKind::Scrape, ProbeKind::Burst});
  CHECK(all_kinds_for(WorkloadKind::Rerank) ==
        std::vector<ProbeKind>{ProbeKind::Health, ProbeKind::Rerank, ProbeKind::Scrape, ProbeKind::Burst});
  for (WorkloadKind w : {WorkloadKind::Embedding, WorkloadKind::Rerank}) {
    const auto kinds = all_kinds_for(w);
    CHECK(std::none_of(kinds.begin(), kinds.end(), is_chat_kind));
  }
}
