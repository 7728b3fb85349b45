// A small parallel_for over row ranges for the CPU reference: std::thread workers (one per hardware
// thread) pull fixed-size chunks from an atomic counter. No pool is kept between calls; the
// reference is a test oracle, so simplicity wins over the last few microseconds of start-up.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

namespace fp4kit::reference::detail {

inline int worker_count() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : int(hw);
}

// Calls body(begin, end) on disjoint chunks that together cover [0, n), with up to `threads`
// threads (the calling thread is one of them). A chunk holds at least `grain` indices (the caller
// picks grain so a chunk is worth a thread); with one chunk, or one thread, the body runs on the
// calling thread. `body` must not throw.
template <class Body>
void parallel_for(int64_t n, int64_t grain, int threads, const Body& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t min_chunks = (n + grain - 1) / grain;
  threads = int(std::min<int64_t>(std::max(threads, 1), min_chunks));
  if (threads <= 1) {
    body(int64_t(0), n);
    return;
  }
  // About four chunks per thread, so that uneven chunks (or a busy core) still balance.
  const int64_t chunk = std::max(grain, (n + 4 * threads - 1) / (4 * threads));
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (;;) {
      const int64_t begin = next.fetch_add(chunk);
      if (begin >= n) return;
      body(begin, std::min(n, begin + chunk));
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(size_t(threads - 1));
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // could not start another thread: the ones we have (and this one) do the work
    }
  }
  worker();
  for (auto& th : pool) th.join();
}

// The same with one thread per hardware thread.
template <class Body>
void parallel_for(int64_t n, int64_t grain, const Body& body) {
  parallel_for(n, grain, worker_count(), body);
}

}  // namespace fp4kit::reference::detail
