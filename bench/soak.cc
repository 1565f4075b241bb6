// Soak test of the runtime (issue 16): one Engine serves every core at full load for a fixed
// time, each thread with its own ExecutionContext running random batch sizes back to back. Prints
// a table per time window (runs, latency p50/p99 at the middle batch, RSS), then the RSS growth
// from the first window to the last and the latency drift; exits 1 when RSS grew more than 1%.
//
//   build/bench/qcc_soak MODEL.plan [--seconds 600] [--threads T] [--windows 10]
//
// Latency percentiles are over the runs of one batch size (the plan's middle one), so a window
// that happened to draw more large batches does not look slower. RSS is /proc/self/statm's
// resident pages, read at each window's end.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/engine.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct Window {
  std::mutex mu;
  std::vector<double> middle_ms;  // latencies of runs at the middle batch
  int64_t runs = 0;
};

int Usage(const char* error) {
  std::fprintf(stderr,
               "qcc_soak: %s\nusage: qcc_soak MODEL.plan [--seconds S] [--threads T] "
               "[--windows W]\n",
               error);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage("no plan given");
  std::string plan_path = argv[1];
  double seconds = 600;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int windows = 10;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage(("no value after " + arg).c_str());
    const char* value = argv[++i];
    if (arg == "--seconds") {
      seconds = std::atof(value);
    } else if (arg == "--threads") {
      threads = std::atoi(value);
    } else if (arg == "--windows") {
      windows = std::atoi(value);
    } else {
      return Usage(("unknown flag " + arg).c_str());
    }
  }
  if (!(seconds > 0) || threads < 1 || windows < 2)
    return Usage("bad --seconds/--threads/--windows");

  // One kernel thread per step: the load comes from the concurrent contexts.
  auto engine = qcc::runtime::Engine::Load(plan_path, {1});
  if (!engine.ok()) {
    std::fprintf(stderr, "qcc_soak: %s\n", std::string(engine.status().message()).c_str());
    return 1;
  }
  const int64_t lo = (*engine)->batch_min(), hi = (*engine)->batch_max();
  const int64_t middle = (lo + hi) / 2;
  // One random input per batch size, shared read-only by every thread.
  std::vector<std::vector<qcc::Tensor>> inputs(hi + 1);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int64_t b = lo; b <= hi; ++b) {
    for (const qcc::runtime::TensorInfo& in : (*engine)->inputs()) {
      std::vector<int64_t> dims = in.dims;
      if (!dims.empty() && dims[0] < 0) dims[0] = b;
      qcc::Tensor t(qcc::DType::kFloat32, dims);
      for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = uniform(rng);
      inputs[b].push_back(t.dtype() == in.dtype ? t : qcc::CastTensor(t, in.dtype));
    }
  }

  std::printf("soak: %s, batches %lld..%lld, %d threads, %.0f s in %d windows\n", plan_path.c_str(),
              static_cast<long long>(lo), static_cast<long long>(hi), threads, seconds, windows);
  std::printf("%-8s %10s %12s %12s %12s\n", "window", "runs", "p50 ms", "p99 ms", "RSS MiB");
  std::vector<Window> stats(windows);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  const Clock::time_point start = Clock::now();
  const double window_seconds = seconds / windows;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::unique_ptr<qcc::runtime::ExecutionContext> ctx = (*engine)->CreateContext();
      std::mt19937 pick(100 + t);
      std::uniform_int_distribution<int64_t> batch(lo, hi);
      while (!stop.load(std::memory_order_relaxed)) {
        const int64_t b = batch(pick);
        const Clock::time_point t0 = Clock::now();
        if (!ctx->Run(inputs[b]).ok()) ++failures;
        const Clock::time_point t1 = Clock::now();
        const int w =
            static_cast<int>(std::chrono::duration<double>(t1 - start).count() / window_seconds);
        if (w >= windows) break;
        Window& win = stats[w];
        std::lock_guard<std::mutex> lock(win.mu);
        ++win.runs;
        if (b == middle) {
          win.middle_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
      }
    });
  }
  std::vector<int64_t> rss(windows);
  for (int w = 0; w < windows; ++w) {
    std::this_thread::sleep_until(start +
                                  std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(window_seconds * (w + 1))));
    rss[w] = ResidentBytes();
  }
  stop = true;
  for (std::thread& th : pool) th.join();
  for (int w = 0; w < windows; ++w) {
    std::printf("%-8d %10lld %12.3f %12.3f %12.1f\n", w, static_cast<long long>(stats[w].runs),
                Percentile(stats[w].middle_ms, 0.5), Percentile(stats[w].middle_ms, 0.99),
                rss[w] / 1048576.0);
  }
  const double growth = 100.0 * (static_cast<double>(rss.back()) - rss.front()) / rss.front();
  const double p50_drift =
      Percentile(stats.back().middle_ms, 0.5) / Percentile(stats.front().middle_ms, 0.5);
  const double p99_drift =
      Percentile(stats.back().middle_ms, 0.99) / Percentile(stats.front().middle_ms, 0.99);
  int64_t runs = 0;
  for (const Window& w : stats) runs += w.runs;
  std::printf(
      "soak: runs=%lld failures=%d rss_start_mib=%.1f rss_end_mib=%.1f rss_growth_pct=%.2f "
      "p50_drift=%.3f p99_drift=%.3f\n",
      static_cast<long long>(runs), failures.load(), rss.front() / 1048576.0,
      rss.back() / 1048576.0, growth, p50_drift, p99_drift);
  return failures.load() == 0 && growth <= 1.0 ? 0 : 1;
}
