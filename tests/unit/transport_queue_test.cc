// A request waiting in the runtime's own queue is queued, not stalled
// (docs/DESIGN.md §2.2): each time the runtime finishes a request queued ahead
// of it, its first-content budget runs again from then. Virtual time only.
#include "core/clock.h"
#include "probes/transport/deadline.h"
#include "tests/catch.h"

using namespace soak;

namespace {
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kStall = 1'000 * kMs;
constexpr int64_t kPrefill = 300 * kMs;
constexpr int64_t kWall = 60'000 * kMs;
}  // namespace

TEST_CASE("queue: the queue moving restarts the first-content budget, allowance included") {
  VirtualClock clock;
  StallMarks m;
  m.start_ns = clock.mono_ns();
  const TransferLimits l{kWall, kStall, kPrefill, std::nullopt};
  // Without the queue moving, the budget is start + stall + allowance.
  CHECK(check_deadlines(m, l, m.start_ns).stall_at_ns == m.start_ns + kStall + kPrefill);
  clock.advance_ms(900);
  m.queue_moved_ns = clock.mono_ns();
  auto c = check_deadlines(m, l, clock.mono_ns());
  CHECK_FALSE(c.tripped);
  CHECK(c.stall_at_ns == *m.queue_moved_ns + kStall + kPrefill);
  // Past the old budget, still waiting: not stalled.
  clock.advance_ms(1'000);
  CHECK_FALSE(check_deadlines(m, l, clock.mono_ns()).tripped);
  // The queue stops moving: stalled a whole budget after its last move.
  clock.advance_ms(300);
  CHECK(check_deadlines(m, l, clock.mono_ns()).tripped == EndReason::Stalled);
}

TEST_CASE("queue: a burst of 80 on 2 slots served 2 at a time never reads as a hang") {
  // Each service takes 0.6 of the stall timeout: the 79th and 80th wait 39
  // services (23.4 stall timeouts) for their slot.
  VirtualClock clock;
  const int64_t start = clock.mono_ns();
  const TransferLimits l{kWall, kStall, 0, std::nullopt};
  const int64_t service = 600 * kMs;
  int stalled = 0;
  for (int member = 0; member < 80; ++member) {
    const int place = member / 2;  // rounds served before this member's slot frees
    StallMarks m;
    m.start_ns = start;
    for (int round = 1; round <= place; ++round) {
      const int64_t t = start + round * service;
      if (check_deadlines(m, l, t).tripped) break;
      m.queue_moved_ns = t;  // the two members ahead of it finished
    }
    const int64_t first_token = start + place * service + 100 * kMs;
    if (check_deadlines(m, l, first_token).tripped) ++stalled;
  }
  CHECK(stalled == 0);
}

TEST_CASE("queue: after the first content only content counts; the wall deadline never moves") {
  StallMarks m;
  m.start_ns = 0;
  m.last_content_ns = 100 * kMs;
  m.queue_moved_ns = 900 * kMs;
  const TransferLimits l{2'000 * kMs, kStall, kPrefill, std::nullopt};
  CHECK(check_deadlines(m, l, 0).stall_at_ns == 100 * kMs + kStall);
  StallMarks q;
  q.start_ns = 0;
  q.queue_moved_ns = 1'900 * kMs;
  CHECK(check_deadlines(q, l, 2'000 * kMs).tripped == EndReason::Timeout);
}

TEST_CASE("queue: the stall detail says the clock ran from the queue's last move") {
  HttpRequest r;
  r.stall_timeout_ms = 1000;
  r.prefill_allowance_ms = 300;
  StallMarks m;
  m.queue_moved_ns = 5;
  const std::string d = describe_limit(EndReason::Stalled, r, m);
  CHECK(d.find("plus the prefill allowance of 300 ms") != std::string::npos);
  CHECK(d.find("since the runtime's queue last moved") != std::string::npos);
}

TEST_CASE("queue: one origin per server, however its base URL is spelled") {
  CHECK(origin_of("http://127.0.0.1:8080/v1/chat/completions") == "http://127.0.0.1:8080");
  CHECK(origin_of("HTTP://LocalHost:8080") == "http://localhost:8080");
  CHECK(origin_of("http://localhost/v1") == "http://localhost:80");
  CHECK(origin_of("https://user:pw@example.org/x?y") == "https://example.org:443");
  CHECK(origin_of("http://[::1]:11434/api") == "http://[::1]:11434");
  CHECK(origin_of("http://[::1]/api") == "http://[::1]:80");
  CHECK(origin_of("http://127.0.0.1:8080") != origin_of("http://127.0.0.1:8081"));
  CHECK(origin_of("not a url") == "not a url");
}

TEST_CASE("queue: after a move, a request that counted prompts ahead of it gets one prompt's allowance") {
  // A capacity member behind three rounds of prefills on its slot: four
  // prompts' allowance from the start, its own alone after each move.
  VirtualClock clock;
  StallMarks m;
  m.start_ns = clock.mono_ns();
  const TransferLimits l{kWall, kStall, 4 * kPrefill, kPrefill};
  CHECK(check_deadlines(m, l, m.start_ns).stall_at_ns == m.start_ns + kStall + 4 * kPrefill);
  // An early move never shortens the budget from the start.
  m.queue_moved_ns = m.start_ns + 100 * kMs;
  CHECK(check_deadlines(m, l, m.start_ns).stall_at_ns == m.start_ns + kStall + 4 * kPrefill);
  // A late move: one prompt's allowance from it, not four.
  clock.advance_ms(1'000);
  m.queue_moved_ns = clock.mono_ns();
  CHECK(check_deadlines(m, l, clock.mono_ns()).stall_at_ns == *m.queue_moved_ns + kStall + kPrefill);
  clock.advance_ms(1'300);
  CHECK(check_deadlines(m, l, clock.mono_ns()).tripped == EndReason::Stalled);
  // The same move with the allowance counted twice, as before: not yet stalled.
  const TransferLimits twice{kWall, kStall, 4 * kPrefill, std::nullopt};
  CHECK_FALSE(check_deadlines(m, twice, clock.mono_ns()).tripped);
}

TEST_CASE("queue: the stall detail names the allowance in force after the move") {
  HttpRequest r;
  r.stall_timeout_ms = 1000;
  r.prefill_allowance_ms = 1200;
  r.moved_prefill_allowance_ms = 300;
  StallMarks m;
  m.queue_moved_ns = 5;
  const std::string d = describe_limit(EndReason::Stalled, r, m);
  CHECK(d.find("plus the prefill allowance of 300 ms since the runtime's queue last moved") != std::string::npos);
}

// ---------------------------------------------------------------- queued is not hung
// A request whose budget runs out before its first byte while the runtime is
// busy is held in its queue: only the wall limit applies until it leaves
// (docs/DESIGN.md §2.2 "Queued is not hung").

TEST_CASE("queue hold: a held request has no stall limit, and the wall reached while held is queue_timeout") {
  VirtualClock clock;
  StallMarks m;
  m.start_ns = clock.mono_ns();
  const TransferLimits l{10 * kStall, kStall, kPrefill, std::nullopt};
  clock.advance_ms(1'300);
  REQUIRE(check_deadlines(m, l, clock.mono_ns()).tripped == EndReason::Stalled);  // its budget: spent
  m.held_since_ns = clock.mono_ns();
  auto held = check_deadlines(m, l, clock.mono_ns());
  CHECK_FALSE(held.tripped);
  CHECK_FALSE(held.stall_at_ns);                  // no stall deadline while queued
  CHECK(held.next_ns == m.start_ns + l.wall_ns);  // only the wall
  clock.advance_ms(5'000);
  CHECK_FALSE(check_deadlines(m, l, clock.mono_ns()).tripped);  // five stall timeouts later: still queued
  clock.advance_ms(3'700);
  CHECK(check_deadlines(m, l, clock.mono_ns()).tripped == EndReason::QueueTimeout);
  // The same wait without the hold: a stall long ago.
  StallMarks plain = m;
  plain.held_since_ns.reset();
  CHECK(check_deadlines(plain, l, clock.mono_ns()).tripped == EndReason::Stalled);
}

TEST_CASE("queue hold: leaving the queue gives the budget again from then, the request's own allowance included") {
  VirtualClock clock;
  StallMarks m;
  m.start_ns = clock.mono_ns();
  const TransferLimits l{60 * kStall, kStall, 4 * kPrefill, kPrefill};
  clock.advance_ms(2'300);
  m.held_since_ns = clock.mono_ns();
  clock.advance_ms(8'000);
  // A reading shows a free slot: it leaves (HttpClient sets queue_moved_ns and clears the hold).
  m.held_since_ns.reset();
  m.queue_moved_ns = clock.mono_ns();
  auto c = check_deadlines(m, l, clock.mono_ns());
  CHECK_FALSE(c.tripped);
  CHECK(c.stall_at_ns == *m.queue_moved_ns + kStall + kPrefill);
  clock.advance_ms(1'300);
  CHECK(check_deadlines(m, l, clock.mono_ns()).tripped == EndReason::Stalled);  // out of the queue, a stall is a stall
}

TEST_CASE("queue hold: a spent budget is a stall unless something says the runtime is busy") {
  QueueSignals s;
  CHECK(on_budget_spent(s) == BudgetSpent::Stalled);  // nothing known
  s.can_read = true;
  CHECK(on_budget_spent(s) == BudgetSpent::AskQueue);  // the runtime's queue decides
  s.slots = 2;
  s.in_slots = 1;
  CHECK(on_budget_spent(s) == BudgetSpent::AskQueue);  // one of soakd's in 2 slots: a slot may be free
  s.in_slots = 2;
  CHECK(on_budget_spent(s) == BudgetSpent::Queued);  // soakd's own fill the slots: queued, no reading needed
  s.can_read = false;
  CHECK(on_budget_spent(s) == BudgetSpent::Queued);  // a runtime with no queue route: the own-requests rule alone
  s.slots.reset();
  CHECK(on_budget_spent(s) == BudgetSpent::Stalled);  // slots unknown: today's stall
  s.slots = 2;
  s.first_byte = true;
  CHECK(on_budget_spent(s) == BudgetSpent::Stalled);  // it has a byte: a slot has it, it is past the queue
}

TEST_CASE("queue hold: a reading keeps, lets out or stalls what is held") {
  // Held only until the reading came: its budget is spent, so only a busy runtime keeps it.
  CHECK(on_queue_reading(false, QueueState::Busy) == HeldCall::Stay);
  CHECK(on_queue_reading(false, QueueState::Free) == HeldCall::Stall);
  CHECK(on_queue_reading(false, QueueState::Unknown) == HeldCall::Stall);
  // Held on evidence: a free slot lets it out, an unreadable queue keeps it (the wall bounds it).
  CHECK(on_queue_reading(true, QueueState::Busy) == HeldCall::Stay);
  CHECK(on_queue_reading(true, QueueState::Free) == HeldCall::Leave);
  CHECK(on_queue_reading(true, QueueState::Unknown) == HeldCall::Stay);
}

TEST_CASE("queue hold: the queue wait runs from the request's origin to when it last left, or to its end") {
  CHECK_FALSE(queue_wait_ns(std::nullopt, std::nullopt, 9 * kStall, 0));  // never held
  CHECK(queue_wait_ns(2 * kStall, 9 * kStall, 12 * kStall, kMs) == 9 * kStall - kMs);
  CHECK(queue_wait_ns(2 * kStall, std::nullopt, 12 * kStall, kMs) == 12 * kStall - kMs);  // never let in
}

TEST_CASE("queue hold: the queue_timeout detail says the request waited in the queue and what showed it busy") {
  HttpRequest r;
  r.wall_timeout_ms = 20'000;
  StallMarks m;
  const std::string d = describe_limit(EndReason::QueueTimeout, r, m, "/metrics: 3 requests waiting");
  CHECK(d ==
        "no first byte within the wall timeout of 20000 ms: the request waited in the runtime's queue "
        "(/metrics: 3 requests waiting), which never let it in");
  CHECK(to_string(EndReason::QueueTimeout) == "queue_timeout");
}
