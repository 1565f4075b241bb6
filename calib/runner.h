// The calibration runner: streams a dataset through the fused fp32 graph with its observers
// and gathers every observed tensor's statistics.
//
// Memory is O(observed tensors x bins) plus one batch of activations (at batch 1, one per thread
// and the statistics per thread, but under a memory cap), never O(samples): a sample is read,
// batched, run and dropped.
#ifndef QCC_CALIB_RUNNER_H_
#define QCC_CALIB_RUNNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calib/dataset.h"
#include "calib/tensor_stats.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace qcc::calib {

/// Runs passes::OnnxFormPipeline() (the default one without fuse-attention: the table then has
/// the ranges `qcc export` needs too) and then the insert-observers pass on `graph`: the graph
/// the runner executes. Returns what each pass did.
absl::StatusOr<std::vector<passes::PassRecord>> InstrumentForCalibration(ir::Graph& graph);

/// Where the runner executes. kAuto is the GPU when the CUDA backend has one, else the CPU.
enum class Device { kAuto, kCpu, kCuda };

/// Parses "auto", "cpu" or "cuda"; InvalidArgument naming the text otherwise.
absl::StatusOr<Device> ParseDevice(absl::string_view text);

struct RunnerOptions {
  /// Samples per inference; 1 is used for a model whose batch dimension is fixed at 1.
  int64_t batch = 16;
  /// Threads for the kernels and the statistics; 0: every core.
  int num_threads = 0;
  /// Bytes of activations the fp32 model may hold at once (EvalOptions::max_memory); 0: the
  /// machine's memory.
  int64_t max_memory = 0;
  Device device = Device::kAuto;
  /// Called after every batch with the samples read so far (skipped ones included) and the
  /// dataset's size.
  std::function<void(int64_t done, int64_t total)> on_progress;
};

/// What a calibration run gathered.
struct CalibrationRun {
  /// Per observed tensor name.
  std::map<std::string, TensorStats> tensors;
  /// Samples that went through the model.
  int64_t samples = 0;
  /// Images that could not be decoded, skipped with a warning.
  std::vector<std::string> skipped_files;
  /// The batch size actually used.
  int64_t batch = 1;
  /// The device that ran the model.
  Device device = Device::kCpu;
};

/// Runs every sample of `data` through `graph` (instrumented by InstrumentForCalibration) in
/// batches of options.batch samples of equal shape. Errors: a graph without Observe nodes, a
/// device that is not available (--device cuda before the CUDA backend), a model whose batch
/// dimension is fixed at a value other than 1, and every error of reading or running a sample
/// (naming the file).
absl::StatusOr<CalibrationRun> RunCalibration(const ir::Graph& graph, Dataset& data,
                                              const RunnerOptions& options);

}  // namespace qcc::calib

#endif  // QCC_CALIB_RUNNER_H_
