// Shared by the CPU runner (runner.cc) and the CUDA runner (runner_cuda.cc).
#ifndef QCC_CALIB_RUNNER_INTERNAL_H_
#define QCC_CALIB_RUNNER_INTERNAL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calib/dataset.h"
#include "calib/runner.h"
#include "ir/graph.h"
#include "support/tensor.h"

namespace qcc::calib::internal {

/// Reads every sample of `data`, stacks runs of equal shapes into batches of up to `batch`
/// samples and calls `run_batch` on each; reports progress through options.on_progress and
/// fills run->samples and run->skipped_files. Errors of run_batch name the batch's first file.
absl::Status StreamBatches(Dataset& data, const RunnerOptions& options, int64_t batch,
                           const std::function<absl::Status(const std::vector<Tensor>&)>& run_batch,
                           CalibrationRun* run);

/// The CUDA runner: `names` maps observer ids to tensor names. Unimplemented when the model
/// cannot run on the CUDA runtime (a step with no CUDA kernel, extents only known at run time);
/// FailedPrecondition without CUDA or a device.
absl::StatusOr<CalibrationRun> RunCalibrationCuda(const ir::Graph& graph, Dataset& data,
                                                  const RunnerOptions& options,
                                                  const std::vector<std::string>& names,
                                                  int64_t batch);

}  // namespace qcc::calib::internal

#endif  // QCC_CALIB_RUNNER_INTERNAL_H_
