// `soakd probe --config F --candidate NAME [--kind K] [--json]`: the way a user
// smoke-tests a candidate before scheduling it. Runs the probes once against
// the candidate, prints a table (or JSON), stores every row in the config's
// store beside a running daemon (WAL; the daemon lock is not taken), and
// registers the host and the candidate x build as the daemon does.
//
// Exit codes: 0 every row clean, 1 a row was not clean or something failed
// (config, store), 2 usage error (missing option, unknown candidate or kind).
// Threading: runs its own libuv loop on the calling thread until done.
#pragma once

#include <string>
#include <vector>

#include "core/args.h"
#include "core/types.h"

namespace soak {

int cmd_probe(const Args& a);

// What `--kind all` runs for a candidate of `workload`: every kind for chat; for
// an embedding or rerank server, every kind its stages schedule (health, its
// pooling probe, scrape, pooling bursts), never a chat kind (docs/DESIGN.md §2.14).
std::vector<ProbeKind> all_kinds_for(WorkloadKind workload);

// The text table `soakd probe` prints (one line per row, then a summary line).
std::string format_probe_table(const std::vector<ProbeResult>& rows);
// The JSON document `soakd probe --json` prints.
std::string format_probe_json(const std::string& candidate, const std::string& build,
                              const std::vector<ProbeResult>& rows);

}  // namespace soak
