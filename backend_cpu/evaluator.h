// Runs an ir::Graph on the CPU, node by node, with the kernels of the CPU op registry.
// It is the fp32 reference executor: `qcc run` on an ONNX model, constant folding and the
// calibration runner all use it.
#ifndef QCC_BACKEND_CPU_EVALUATOR_H_
#define QCC_BACKEND_CPU_EVALUATOR_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backend_cpu/eval_arena.h"
#include "backend_cpu/op_registry.h"
#include "ir/graph.h"
#include "support/tensor.h"

namespace qcc::cpu {

struct EvalOptions {
  /// Threads for kernels that parallelise (GEMM); 0 means every core.
  int num_threads = 0;
  /// Called with each node output right after it is computed (observers, debugging).
  std::function<void(const ir::Value&, const Tensor&)> on_value;
  /// Called after each node has run, in node order (profiling): unlike on_value it leaves the
  /// residual fusion on; a fused Conv is done (at no cost) where it would have run, its work
  /// counted at its Add.
  std::function<void(const ir::Node&)> on_node_done;
  /// Receives the input of every Observe node (calibration); unset: Observe nodes do nothing.
  ObserveFn on_observe;
  /// Bytes of node outputs a run may hold at once (support/memory.h); 0: the machine's memory.
  /// A node whose output would pass it is a ResourceExhausted error naming the node and shape.
  int64_t max_memory = 0;
  /// Images per slice when a run's batch is larger (eval_slices.h): 0 chooses them
  /// (EvalSliceImages: kEvalSliceBytes of activations with on_observe, whose slices run one
  /// after another; kEvalSmallSliceBytes without, num_threads slices at a time), a negative
  /// value never slices, n > 0 slices by at most n. Only graphs whose nodes keep the images of
  /// a batch apart run in slices, and never with on_value or on_node_done (they see whole-batch
  /// tensors and nodes once); on_observe sees each slice.
  int64_t slice_images = 0;
};

/// Executes one graph. Does not own the graph, which must outlive it and stay unchanged.
/// Each intermediate tensor is freed (or its arena bytes reused) right after its last consumer;
/// from the second run on the same input shapes the intermediates live in one arena kept
/// between runs (see eval_arena.h). Run may be called from several threads at once.
class Evaluator {
 public:
  /// Checks that every node has a CPU kernel; the error names the first node without one, its op
  /// and the model's opset.
  static absl::StatusOr<std::unique_ptr<Evaluator>> Create(const ir::Graph& graph,
                                                           EvalOptions options = {});

  /// Runs the graph on `inputs` (graph-input order) and returns the graph outputs in order.
  /// Inputs are checked first: count, dtype, rank, known extents, and that a symbolic extent
  /// (e.g. the batch) has one value across all inputs.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) const;

  /// Images per slice of a larger batch in a run with on_observe (EvalOptions::slice_images);
  /// 0: runs are never sliced.
  int64_t slice_images() const { return slice_images_; }
  /// The memory of the last Run that succeeded (zeros before the first; of its last slice).
  EvalMemoryStats last_run_memory() const { return arena_->last_stats(); }
  /// Conv -> Add pairs a run computes as one Conv with the residual (see residual_adds_).
  int64_t fused_residual_adds() const { return static_cast<int64_t>(residual_adds_.size()); }
  /// The Conv that runs in `add`'s place with its residual (see residual_adds_), or null.
  const ir::Node* FusedConvOf(const ir::Node& add) const {
    auto it = residual_adds_.find(&add);
    return it == residual_adds_.end() ? nullptr : it->second.conv;
  }

 private:
  Evaluator(const ir::Graph& graph, EvalOptions options);
  /// `symbols` receives the extent each symbolic input dim has in this run.
  absl::Status CheckInputs(absl::Span<const Tensor> inputs,
                           absl::flat_hash_map<ir::Dim, int64_t>& symbols) const;
  /// Run on inputs CheckInputs accepted, whole (no slicing).
  absl::StatusOr<std::vector<Tensor>> RunWhole(absl::Span<const Tensor> inputs,
                                               absl::flat_hash_map<ir::Dim, int64_t> symbols) const;
  /// Fills packed_conv_weights_ for a Conv node whose W is a constant.
  void PackConvWeights(const ir::Node& node);
  /// Fills residual_adds_ and residual_convs_.
  void FindResidualAdds(const absl::flat_hash_set<const ir::Value*>& graph_outputs);

  const ir::Graph& graph_;
  EvalOptions options_;
  const OpRegistry& registry_ = DefaultOpRegistry();
  std::unique_ptr<internal::EvalArena> arena_;
  /// fp32 copies of the fp16/bf16 constants that ops computing in fp32 read (an fp16 model's
  /// weights), made once here instead of on every run. They live as long as the evaluator (an
  /// fp16 model's weights then take three times their bytes) and, like the model's own
  /// constants, are not counted against EvalOptions::max_memory, which bounds node outputs.
  absl::flat_hash_map<const ir::Value*, Tensor> widened_constants_;
  /// Each Conv's constant weights packed for its kernel once (kernels/conv.h), where ConvF32
  /// would pack them on every call; the same bits. Held and uncounted like widened_constants_.
  absl::flat_hash_map<const ir::Node*, cpu::PackedConvF32> packed_conv_weights_;
  /// For the packings that depend on the extents (ConvF32PackingDependsOnExtents), the spatial
  /// input and output extents they were made for: the graph's static ones.
  absl::flat_hash_map<const ir::Node*, std::pair<std::array<int64_t, 3>, std::array<int64_t, 3>>>
      packed_conv_extents_;
  /// The Concat inputs that a run may compute in place, their producer writing straight into
  /// their slice of the Concat's output (which then copies only the others): each is an op's
  /// output, the Concat's input `index`, and read by nothing else but calibration taps
  /// (Observe; not a graph output either).
  /// Whether a run does it depends on the extents (Run: a slice must be contiguous, as a
  /// channel concat's are at batch 1).
  struct ConcatSlot {
    const ir::Node* concat;
    int index;
  };
  absl::flat_hash_map<const ir::Value*, ConcatSlot> concat_slots_;
  /// Residual fusion: a Conv (fp32, no fused activation) whose output only an Add reads, with the
  /// Add's other input of that output's type (a ResNet's or an inverted-residual block's
  /// shortcut), runs in the Add's place and adds that input in its epilogue before the Add's
  /// activation (kernels/cpu/conv.h, ConvF32Params::residual): one pass over the output where
  /// there were two, the same bits. Its inputs stay alive until then. Off when on_value asks for
  /// every node's output (on_node_done does not).
  struct ResidualAdd {
    const ir::Node* conv;
    const ir::Value* residual;  // the Add's other input
  };
  absl::flat_hash_map<const ir::Node*, ResidualAdd> residual_adds_;  // by Add node
  /// At least the values a run tracks (its maps are reserved for them).
  size_t value_count_ = 0;
  int64_t slice_images_ = 0;        // runs with on_observe (calibration), one after another
  int64_t small_slice_images_ = 0;  // other runs, num_threads at a time
  absl::flat_hash_set<const ir::Node*> residual_convs_;
};

/// Lists the nodes of `graph` whose op has no CPU kernel (empty when all are supported).
std::vector<const ir::Node*> UnsupportedNodes(const ir::Graph& graph);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_EVALUATOR_H_
