#include "daemon/wiring.h"

#include "daemon/host.h"
#include "platform/runtime_processes.h"
#include "probes/runtimes/catalog.h"

namespace soak {

Wiring::Wiring(Store& store, Logger log, Sampler& sampler, int64_t host_id)
    : outbox_(store, clock_, log, host_id), deps_{store, outbox_, clock_, std::move(log), &loop_, host_id} {
  uv_loop_init(&loop_);
  http_ = std::make_unique<HttpClient>(&loop_, clock_);
  engine_ = std::make_unique<probes::ProbeEngine>(&loop_, *http_, clock_, engine_options(sampler));
}

probes::EngineOptions engine_options(Sampler& sampler) {
  probes::EngineOptions o;
  o.runtime_argv = [&sampler](const CandidateConfig& c) {
    CandidateArgv a = read_candidate_argv(sampler, c);
    return probes::RuntimeArgv{std::move(a.argv), std::move(a.found), std::move(a.error)};
  };
  return o;
}

std::vector<RuntimeSignature> runtime_signatures(probes::RuntimeTable table) {
  std::vector<RuntimeSignature> out;
  for (const probes::Runtime* r : table)
    out.push_back(RuntimeSignature{r->kind, r->processes.programs, r->processes.modules, r->processes.app});
  return out;
}

std::vector<RuntimeSignature> runtime_signatures() { return runtime_signatures(probes::builtin_runtimes()); }

Result<std::unique_ptr<Wiring>> Wiring::build(Store& store, Logger log, Sampler& sampler) {
  ThisHost host = this_host(sampler);
  if (!host.warning.empty()) log->warn("{}", host.warning);
  auto host_id = store.upsert_host(host.info, SystemClock().wall_ms());
  if (!host_id) return error_in("cannot register host", host_id.error());  // its code says whether to wait
  return std::unique_ptr<Wiring>(new Wiring(store, std::move(log), sampler, *host_id));
}

Wiring::~Wiring() { close(); }

void Wiring::end_transfers() {
  if (http_) http_->shutdown();
}

void Wiring::close() {
  if (closed_) return;
  closed_ = true;
  end_transfers();
  engine_.reset();
  http_.reset();
  uv_run(&loop_, UV_RUN_DEFAULT);  // their close callbacks free them
  if (uv_loop_close(&loop_) != 0) {
    uv_walk(
        &loop_,
        [](uv_handle_t* h, void* arg) {
          static_cast<spdlog::logger*>(arg)->warn("handle left open at exit: {}", uv_handle_type_name(h->type));
        },
        deps_.log.get());
  }
}

}  // namespace soak
