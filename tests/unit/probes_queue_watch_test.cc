// The runtime's own queue state (probes/queue_watch.h): llama.cpp /slots and
// /metrics read from real captures, a move told from a standstill, and a
// source that fails giving way to the next. Pure; no sockets, no time.
#include "probes/queue_watch.h"

#include <string>

#include "probes/runtimes/catalog.h"
#include "tests/catch.h"
#include "tests/unit/probes_capture_local.h"

using namespace soak;
using namespace soak::probes;
using probes_local::load_capture;

namespace {

const Runtime& llama() { return builtin_runtime(RuntimeKind::LlamaCpp); }

std::string slots_json(const std::string& a, const std::string& b) {
  return "[{\"id\":0,\"is_processing\":" + a + "},{\"id\":1,\"is_processing\":" + b + "}]";
}

}  // namespace

TEST_CASE("queue watch: llama.cpp /slots gives the busy slots' tasks, from the real capture") {
  auto busy = read_queue(llama(), QueueSource::Slots, load_capture("get-slots-while-busy.http").body);
  REQUIRE(busy.ok());
  REQUIRE(busy->slot_tasks);
  CHECK(*busy->slot_tasks == std::vector<int64_t>{709, 711});
  auto after = read_queue(llama(), QueueSource::Slots, load_capture("get-slots-after-busy.http").body);
  REQUIRE(after.ok());
  CHECK(after->slot_tasks->empty());  // id_task stays on an idle slot: only busy slots count
  CHECK(queue_moved(*busy, *after));
  CHECK_FALSE(queue_moved(*busy, *busy));
}

TEST_CASE("queue watch: llama.cpp requests_deferred from the real /metrics captures") {
  auto busy = read_queue(llama(), QueueSource::Metrics, load_capture("get-metrics-while-busy.http").body);
  auto fresh = read_queue(llama(), QueueSource::Metrics, load_capture("get-metrics-fresh.http").body);
  REQUIRE(busy.ok());
  REQUIRE(fresh.ok());
  CHECK(busy->waiting == 1);
  CHECK(fresh->waiting == 0);
  CHECK(queue_moved(*busy, *fresh));        // one fewer waits
  CHECK_FALSE(queue_moved(*fresh, *busy));  // one more waits: nothing moved ahead
  CHECK_FALSE(read_queue(llama(), QueueSource::Metrics, "# no series here\n").ok());
}

TEST_CASE("queue watch: vLLM's waiting gauge, summed over its engines") {
  const Runtime& vllm = builtin_runtime(RuntimeKind::Vllm);
  CHECK(first_queue_source(vllm) == QueueSource::Metrics);
  const std::string three =
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2.0\n"
      "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 1.0\n";
  const std::string one = "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1.0\n";
  auto a = read_queue(vllm, QueueSource::Metrics, three);
  auto b = read_queue(vllm, QueueSource::Metrics, one);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->waiting == 3);
  CHECK(queue_moved(*a, *b));
}

TEST_CASE("queue watch: a slot that takes the next task moves the queue though as many are busy") {
  // Two slots busy before and after: the count alone says nothing; the task ids do.
  const std::string before =
      "[{\"id\":0,\"is_processing\":true,\"id_task\":4},"
      "{\"id\":1,\"is_processing\":true,\"id_task\":5}]";
  const std::string next =
      "[{\"id\":0,\"is_processing\":true,\"id_task\":6},"
      "{\"id\":1,\"is_processing\":true,\"id_task\":5}]";
  auto a = read_queue(llama(), QueueSource::Slots, before);
  auto b = read_queue(llama(), QueueSource::Slots, next);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(queue_moved(*a, *b));
  // A build that names no task: a slot going idle is still a move.
  auto busy = read_queue(llama(), QueueSource::Slots, slots_json("true", "true"));
  auto one_free = read_queue(llama(), QueueSource::Slots, slots_json("true", "false"));
  REQUIRE(busy.ok());
  REQUIRE(one_free.ok());
  CHECK(queue_moved(*busy, *one_free));
  CHECK_FALSE(queue_moved(*busy, *busy));
}

TEST_CASE("queue watch: the first reading moves nothing; later ones compare with the one before") {
  QueueWatch w(llama());
  REQUIRE(w.source() == QueueSource::Slots);
  REQUIRE(w.route() != nullptr);
  CHECK(w.route()->path == "/slots");
  const std::string a = "[{\"id\":0,\"is_processing\":true,\"id_task\":1}]";
  const std::string b = "[{\"id\":0,\"is_processing\":true,\"id_task\":2}]";
  CHECK_FALSE(w.on_answer(200, a));
  CHECK_FALSE(w.on_answer(200, a));
  CHECK(w.on_answer(200, b));
  CHECK_FALSE(w.on_answer(200, b));
}

TEST_CASE("queue watch: /slots refused gives way to /metrics, then to nothing") {
  QueueWatch w(llama());
  CHECK_FALSE(w.on_answer(501, "{\"error\":{\"message\":\"This server does not support slots endpoint.\"}}"));
  CHECK(w.source() == QueueSource::Metrics);
  REQUIRE(w.route() != nullptr);
  CHECK(w.route()->path == "/metrics");
  // llama-server without --metrics.
  CHECK_FALSE(w.on_answer(501, "{\"error\":{\"message\":\"This server does not support metrics endpoint.\"}}"));
  CHECK(w.source() == QueueSource::None);
  CHECK(w.route() == nullptr);
  CHECK_FALSE(w.on_answer(200, "[]"));
}

TEST_CASE("queue watch: a reading with no answer keeps the source and its last reading") {
  QueueWatch w(llama());
  const std::string a = "[{\"id\":0,\"is_processing\":true,\"id_task\":1}]";
  const std::string b = "[{\"id\":0,\"is_processing\":true,\"id_task\":2}]";
  CHECK_FALSE(w.on_answer(200, a));
  // Cancelled with its group, or timed out behind a busy prefill.
  CHECK_FALSE(w.on_answer(0, ""));
  CHECK(w.source() == QueueSource::Slots);
  CHECK(w.on_answer(200, b));  // compared with the reading before the silence
}

TEST_CASE("queue watch: a runtime with no queue route is not watched") {
  const Runtime& plain = builtin_runtime(RuntimeKind::OpenAI);
  CHECK(first_queue_source(plain) == QueueSource::None);
  CHECK(QueueWatch(plain).route() == nullptr);
  const Runtime& omlx = builtin_runtime(RuntimeKind::Omlx);
  CHECK(first_queue_source(omlx) == QueueSource::Status);
}

TEST_CASE("queue watch: read several times per stall timeout, within bounds") {
  CHECK(queue_poll_ms(2'000) == 500);
  CHECK(queue_poll_ms(60'000) == kQueuePollMaxMs);
  CHECK(queue_poll_ms(40) == kQueuePollMinMs);
  CHECK(queue_poll_ms(0) == kQueuePollMaxMs);
}

// ---------------------------------------------------------------- busy or not (docs/DESIGN.md §2.2 "Queued is not
// hung")

TEST_CASE("queue busy: llama.cpp's real captures: a request deferred is busy, none deferred is not") {
  auto busy = read_queue(llama(), QueueSource::Metrics, load_capture("get-metrics-while-busy.http").body);
  auto after = read_queue(llama(), QueueSource::Metrics, load_capture("get-metrics-after-busy.http").body);
  REQUIRE(busy.ok());
  REQUIRE(after.ok());
  CHECK(queue_busy(*busy) == true);  // requests_processing 2, requests_deferred 1
  CHECK(queue_busy(*after) == false);
  CHECK(describe_queue(QueueSource::Metrics, *busy) == "/metrics: 1 request waiting");
  // /slots: both slots processing (the third stream queued) is busy; after the streams, idle.
  auto slots = read_queue(llama(), QueueSource::Slots, load_capture("get-slots-while-busy.http").body);
  auto idle = read_queue(llama(), QueueSource::Slots, load_capture("get-slots-after-busy.http").body);
  REQUIRE(slots.ok());
  REQUIRE(idle.ok());
  CHECK(slots->slots_total == 2);
  CHECK(queue_busy(*slots) == true);
  CHECK(queue_busy(*idle) == false);
  CHECK(describe_queue(QueueSource::Slots, *slots) == "/slots: 2 of 2 slots busy");
}

TEST_CASE("queue busy: one slot free is not busy; a reading with neither figure cannot tell") {
  auto one_free = read_queue(llama(), QueueSource::Slots, slots_json("true", "false"));
  REQUIRE(one_free.ok());
  CHECK(queue_busy(*one_free) == false);
  CHECK_FALSE(queue_busy(QueueReading{}).has_value());
  QueueReading waiting;
  waiting.waiting = 3;
  CHECK(queue_busy(waiting) == true);
  CHECK(describe_queue(QueueSource::Status, waiting) == "status: 3 requests waiting");
}

TEST_CASE("queue busy: a waiting count is read before /slots, which may show soakd's own request in its slot") {
  CHECK(first_busy_source(llama()) == QueueSource::Metrics);
  CHECK(next_busy_source(llama(), QueueSource::Metrics) == QueueSource::Slots);  // no --metrics
  CHECK(next_busy_source(llama(), QueueSource::Slots) == QueueSource::None);
  CHECK(first_busy_source(builtin_runtime(RuntimeKind::Vllm)) == QueueSource::Metrics);
  CHECK(first_busy_source(builtin_runtime(RuntimeKind::Omlx)) == QueueSource::Status);
  CHECK(first_busy_source(builtin_runtime(RuntimeKind::OpenAI)) == QueueSource::None);
}
