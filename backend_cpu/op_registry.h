// The CPU op table: for each op kind, the function that runs it on host tensors.
// Filled by explicit registration calls, one per op group (RegisterCpuOps calls them all).
#ifndef QCC_BACKEND_CPU_OP_REGISTRY_H_
#define QCC_BACKEND_CPU_OP_REGISTRY_H_

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "kernels/cpu/conv.h"
#include "support/tensor.h"

namespace qcc::cpu {

/// Receives what an Observe node sees: its observer_id and its input, as fp32.
using ObserveFn = std::function<void(int64_t observer_id, const Tensor& value)>;

/// What an op's run function gets: the node (for its attributes), its input tensors, and its
/// output tensors, already allocated with the inferred dtype and shape. An op may replace an
/// output with a tensor sharing an input's storage (Reshape, Identity) as long as dtype and
/// shape stay the inferred ones.
struct OpContext {
  const ir::Node& node;
  absl::Span<const Tensor> inputs;  // an undefined Tensor for an omitted optional input
  absl::Span<Tensor> outputs;
  int num_threads = 1;
  /// Where Observe nodes report (calibration); null: Observe does nothing. Set, Conv also keeps
  /// to direct sums (ConvF32Params::winograd false), so the statistics do not depend on the CPU.
  const ObserveFn* observe = nullptr;
  /// Conv with a constant W: W packed once by the evaluator (kernels/conv.h's
  /// PackConvF32Weights), or null.
  const PackedConvF32* packed_conv_weights = nullptr;
  /// Non-null when that packing holds only for these input and output extents (spatial, right
  /// aligned as ConvF32Params has them: ConvF32PackingDependsOnExtents); at others the op packs
  /// on its own.
  const std::array<int64_t, 3>* packed_conv_in = nullptr;
  const std::array<int64_t, 3>* packed_conv_out = nullptr;
  /// A Conv whose output only an Add reads, run in that Add's place (the evaluator's residual
  /// fusion): the Add's other input, added to every output before the Add's fused activation
  /// (the Conv has none), and `outputs` is the Add's. Null for a plain Conv.
  const Tensor* residual = nullptr;
  const ir::Node* residual_add = nullptr;
  /// Set by the evaluator when output 0 is an fp16 value computed in fp32 (an fp16 model): the
  /// op may round it to fp16 itself (Conv does, in its kernels' epilogue, where the values are
  /// still in registers) and then sets `rounded_to_f16`; otherwise the evaluator rounds it in a
  /// pass of its own. Both give RoundF32ToF16InPlace's bits.
  bool round_to_f16 = false;
  bool rounded_to_f16 = false;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[i].defined(); }
  const Tensor& input(int i) const { return inputs[i]; }
  Tensor& output(int i) { return outputs[i]; }
  template <typename T>
  const T& attrs() const {
    return node.attrs<T>();
  }
  /// An Unimplemented error naming the node and op, e.g. "no CPU kernel for f64 inputs".
  absl::Status Unsupported(absl::string_view what) const;
  /// An InvalidArgument error naming the node and op.
  absl::Status Error(absl::string_view what) const;
};

using OpRunFn = absl::Status (*)(OpContext& ctx);

/// How an op treats reduced-precision floats (fp16, bf16).
enum class FloatPolicy {
  /// The evaluator casts fp16/bf16 inputs to fp32, and fp32 results back to the inferred
  /// fp16/bf16 output type: the op only ever sees fp32 for float data.
  kComputeInF32,
  /// The op sees the tensors as they are (Cast, constants).
  kAsIs,
  /// The op moves elements by the tensors' element size without reading them, or reads only
  /// shapes (Reshape, Concat, Slice, Where, Shape): an fp16 value kept in fp32 between fp32 ops
  /// moves as fp32 (the same values), so it is not narrowed to fp16 and widened again.
  kMovesElements,
};

struct OpEntry {
  OpRunFn run = nullptr;
  FloatPolicy float_policy = FloatPolicy::kComputeInF32;
  /// The run function is correct when output 0 shares storage with an input of the same dtype
  /// and shape (each output element is computed from the input elements at its own index). The
  /// evaluator then reuses an input that dies at this node instead of allocating the output.
  bool may_run_in_place = false;
};

class OpRegistry {
 public:
  /// Registers `run` for `kind`; a second registration of the same kind replaces the first.
  void Add(ir::OpKind kind, OpRunFn run, FloatPolicy policy = FloatPolicy::kComputeInF32);
  /// Marks the op added for `kind` as OpEntry::may_run_in_place (a later Add clears it).
  void AllowInPlace(ir::OpKind kind) { entries_[static_cast<int>(kind)].may_run_in_place = true; }
  /// The entry for `kind`, or nullptr when no kernel is registered.
  const OpEntry* Find(ir::OpKind kind) const;

 private:
  std::array<OpEntry, ir::kNumOpKinds> entries_{};
};

/// Registration calls of the op groups (each defined in backend_cpu/ops/<group>.cc).
void RegisterNnOps(OpRegistry& registry);           // conv, pool, norm, gemm
void RegisterElementwiseOps(OpRegistry& registry);  // activations, math, compare, logic
void RegisterReduceOps(OpRegistry& registry);       // softmax family, reductions, arg-reductions
void RegisterMovementOps(OpRegistry& registry);     // shape and data movement, cast, constants
void RegisterCalibOps(OpRegistry& registry);        // Observe
void RegisterQuantizeOps(OpRegistry& registry);     // QuantizeLinear, DequantizeLinear

/// Registers every CPU op.
void RegisterCpuOps(OpRegistry& registry);
/// A registry with every CPU op, built on first use.
const OpRegistry& DefaultOpRegistry();

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_OP_REGISTRY_H_
