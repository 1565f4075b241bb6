// Running a large batch through the evaluator as slices of a few images, as the plan runtime does
// (runtime/batch_slices.h): node by node over a whole batch of 32 ImageNet images, every
// activation is tens of MB and each node reads its input back from memory; a slice whose
// activations fit in cache runs each node on data the previous one left there (efficientnet-lite0
// fp32 at batch 32 on 1 thread: 8-12% faster in slices of 2). Only for a graph whose every node
// treats the images of a batch apart. Slices have sizes one apart at most. Calibration's
// (on_observe) run one after another on the calling thread, each node on every thread, and its
// observers see each slice in turn, which TensorStats merges exactly; other runs take slices of
// about a core's L2 and run num_threads of them at a time, each on one thread, with no join
// between their nodes (efficientnet-lite0 fp32 b32 on 2 threads 166-170 -> 152-155 ms).
#ifndef QCC_BACKEND_CPU_EVAL_SLICES_H_
#define QCC_BACKEND_CPU_EVAL_SLICES_H_

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace qcc::cpu {

/// Live activation bytes a slice may hold at once (EvalSliceImages): calibration's slices, which
/// run one after another with every step on all threads ...
inline constexpr uint64_t kEvalSliceBytes = uint64_t{12} << 20;
/// ... and other runs' slices, which run on one thread each, several at a time: about a core's
/// L2.
inline constexpr uint64_t kEvalSmallSliceBytes = uint64_t{1} << 20;

/// True when image i of every graph output depends only on image i of the inputs: every input
/// and every non-constant value has the inputs' symbolic batch as its leading extent and static
/// extents after it, and every node is per image (elementwise ops with broadcasts from constants
/// without a batch, convolutions, pools, GEMMs over rows, and movements, concatenations,
/// softmaxes and normalizations that keep the batch axis whole). Otherwise `why` (when given)
/// names the value or node that keeps it.
bool GraphImagesIndependent(const ir::Graph& graph, std::string* why = nullptr);

/// The most images a slice holds with the activations alive at once (in node order, freed after
/// their last use) within `budget` bytes, at least 1; 0 when the graph cannot run in slices.
int64_t EvalSliceImages(const ir::Graph& graph, uint64_t budget = kEvalSliceBytes);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_EVAL_SLICES_H_
