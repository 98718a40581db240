// Throughput of WorkQueue add + get + done for 10,000 distinct keys, with the worker coroutines
// on one or two io_context threads.
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "http/asio.h"
#include "runtime/work_queue.h"

namespace nmo::runtime {
namespace {

constexpr int kKeys = 10'000;
constexpr int kWorkersPerThread = 2;

std::vector<std::string> make_keys() {
  std::vector<std::string> keys;
  keys.reserve(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back("namespace-" + std::to_string(i % 100) + "/object-" + std::to_string(i));
  }
  return keys;
}

// One iteration: add every key, then let the workers get and finish them all.
void work_queue_add_get_done(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const std::vector<std::string> keys = make_keys();
  for ([[maybe_unused]] auto iteration : state) {
    asio::io_context ctx(threads);
    WorkQueue queue(ctx.get_executor());
    std::atomic<int> handled{0};
    for (const std::string& key : keys) {
      queue.add(key);
    }
    queue.shut_down_with_drain();  // workers stop once every key is done
    for (int w = 0; w < threads * kWorkersPerThread; ++w) {
      asio::co_spawn(
          ctx,
          [&queue, &handled]() -> asio::awaitable<void> {
            while (std::optional<std::string> key = co_await queue.get()) {
              queue.done(*key);
              handled.fetch_add(1, std::memory_order_relaxed);
            }
          },
          asio::detached);
    }
    std::vector<std::thread> extra;
    for (int t = 1; t < threads; ++t) {
      extra.emplace_back([&ctx] { ctx.run(); });
    }
    ctx.run();
    for (std::thread& thread : extra) {
      thread.join();
    }
    if (handled.load() != kKeys) {
      state.SkipWithError("not every key was handed out");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}
BENCHMARK(work_queue_add_get_done)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nmo::runtime
