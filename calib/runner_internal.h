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

/// Runs a group of batches (each one tensor per model input), in any order or at once, and
/// returns one status per batch.
using RunBatchGroupFn =
    std::function<std::vector<absl::Status>(const std::vector<std::vector<Tensor>>& batches)>;

/// Reads every sample of `data`, stacks runs of equal shapes into batches of up to `batch`
/// samples and calls `run_group` on every `group` batches (fewer at the end); reports progress
/// through options.on_progress after each batch of a group and fills run->samples and
/// run->skipped_files. The first failed batch of a group, in reading order, is the error, naming
/// the batch's first file.
absl::Status StreamBatchGroups(Dataset& data, const RunnerOptions& options, int64_t batch,
                               int64_t group, const RunBatchGroupFn& run_group,
                               CalibrationRun* run);

/// StreamBatchGroups one batch at a time.
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
