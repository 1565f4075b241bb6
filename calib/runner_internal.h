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
/// samples and calls `run_batch` on each; reports progress through options.on_progress after
/// each batch and fills run->samples and run->skipped_files. A failed batch is the error,
/// naming the batch's first file.
absl::Status StreamBatches(Dataset& data, const RunnerOptions& options, int64_t batch,
                           const std::function<absl::Status(const std::vector<Tensor>&)>& run_batch,
                           CalibrationRun* run);

/// Runs one sample (one tensor per model input, batch 1) on lane `lane`.
using RunLaneSampleFn = std::function<absl::Status(int lane, const std::vector<Tensor>& inputs)>;

/// Reads every sample of `data` and runs each on one of `lanes` threads (lanes 0 .. lanes - 1,
/// each its own thread): a lane takes the next sample as soon as its last one has run. Run
/// `lanes` samples at a time, each group waiting for its slowest, the lane that shared a core
/// with the reader thread held back every group (squeezenet1.1 on 2 threads: the other lane
/// spent about a quarter of its time waiting; 2.98-3.19 s, 2.83-2.90 s without the wait).
/// Which lane runs which sample varies. Reports progress (samples run so far) through
/// options.on_progress and fills run->samples and run->skipped_files. After a failure no lane
/// takes another sample; the failed sample first in reading order is the error, named by its
/// file, else Dataset::Next's error.
absl::Status StreamLanes(Dataset& data, const RunnerOptions& options, int lanes,
                         const RunLaneSampleFn& run_sample, CalibrationRun* run);

/// The CUDA runner: `names` maps observer ids to tensor names. Unimplemented when the model
/// cannot run on the CUDA runtime (a step with no CUDA kernel, extents only known at run time);
/// FailedPrecondition without CUDA or a device.
absl::StatusOr<CalibrationRun> RunCalibrationCuda(const ir::Graph& graph, Dataset& data,
                                                  const RunnerOptions& options,
                                                  const std::vector<std::string>& names,
                                                  int64_t batch);

}  // namespace qcc::calib::internal

#endif  // QCC_CALIB_RUNNER_INTERNAL_H_
