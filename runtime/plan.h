// Plan: the in-memory description of a compiled model (kernel graph, buffers, bindings, weights),
// the unit the plan file format (runtime/plan_format.h) writes and reads.
#ifndef QCC_RUNTIME_PLAN_H_
#define QCC_RUNTIME_PLAN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "support/dtype.h"

namespace qcc::runtime {

/// Alignment of every weight in the weights section and of every arena offset, in bytes.
inline constexpr uint64_t kPlanAlignment = 64;
/// `n` rounded up to a multiple of kPlanAlignment.
inline constexpr uint64_t AlignToPlan(uint64_t n) {
  return (n + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}
/// kPlanAlignment-aligned, uninitialised heap storage for `bytes` bytes (one block when 0);
/// nullptr when the allocation fails.
std::shared_ptr<uint8_t> AllocatePlanAligned(uint64_t bytes);
/// Limits a valid plan stays within (they bound what a corrupt file can make a reader allocate).
inline constexpr size_t kMaxPlanRank = 32;
inline constexpr size_t kMaxPlanNameBytes = 65535;
inline constexpr int64_t kMaxPlanBatch = int64_t{1} << 24;
inline constexpr uint64_t kMaxPlanArenaBytes = uint64_t{1} << 40;

/// A constant tensor stored in the weights section, at `offset` (64-byte aligned) for `nbytes`
/// bytes, dense row-major. `nbytes` equals the element count times the dtype size.
struct PlanWeight {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};

/// Where a buffer's bytes live while a plan runs.
enum class BufferKind : uint8_t {
  kArena,   ///< in the execution context's arena, at `arena_offset`
  kInput,   ///< supplied by the caller through an input binding
  kOutput,  ///< written to the caller's memory through an output binding
  kWeight,  ///< a weight of the plan (read-only)
};

/// A tensor the steps read or write; its id is its index in Plan::buffers. dims[0] may be -1, the
/// dynamic batch (any value in [batch_min, batch_max]); every other extent is known.
struct PlanBuffer {
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  BufferKind kind = BufferKind::kArena;
  int64_t arena_offset = -1;  ///< kArena only: byte offset, sized for batch_max; else -1
  int32_t weight = -1;        ///< kWeight only: index in Plan::weights; else -1
  std::string name;           ///< the tensor name, for per-layer reports and errors
};

/// The target name of plans for the CUDA runtime (Plan::target).
inline constexpr absl::string_view kCudaTarget = "cuda";

/// The device kernel family `qcc compile --target cuda` chose for a step (backend_cuda/lowering.h
/// chooses, the CUDA runtime runs it). kNone in a plan of any other target; every step of a
/// "cuda" plan has one.
enum class CudaKernel : uint8_t {
  kNone,            ///< no choice recorded (not a "cuda" plan)
  kIm2colImma,      ///< int8 conv, group 1: im2col + cuBLASLt IMMA "TN" GEMM per image + requant
  kImma,            ///< int8 Gemm/MatMul: row pad + cuBLASLt IMMA "TN" GEMM + requant epilogue
  kDirectQConv,     ///< int8 grouped/depthwise conv: a thread per 4 outputs of a row (own)
  kIm2colGemm,      ///< fp32 conv, group 1: (im2col +) cuBLASLt fp32 GEMM per image + epilogue
  kIm2colHalfGemm,  ///< conv of fp16 weights, group 1: im2col + cuBLASLt fp16 GEMM, fp32 sums
  kGemm,            ///< float Gemm: cuBLASLt GEMM (fp32 accumulate) + epilogue
  kDirectConv,      ///< float grouped/depthwise conv: a thread per 4 outputs of a row (own)
  kAlias,           ///< Reshape: the output is the input's bytes (a device copy when not aliased)
  kIndex,           ///< every other step: our own one-thread-per-element kernel
  kNumKernels,
};

/// "none", "im2col-imma", "imma", "direct-qconv", "im2col-gemm", "im2col-gemm-fp16", "gemm",
/// "direct-conv", "alias", "index" (for reports; plans store the number).
absl::string_view CudaKernelName(CudaKernel kernel);

/// One kernel invocation. `kind` is a kernel kind the lowering defines (the format stores only the
/// number); parameters are positional `ints`/`floats`; large per-channel arrays live in weights.
struct PlanStep {
  uint32_t kind = 0;
  std::string name;             ///< the ONNX node name (may be empty)
  std::vector<int32_t> inputs;  ///< buffer ids; -1 marks an omitted optional input
  std::vector<int32_t> outputs;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  CudaKernel cuda_kernel = CudaKernel::kNone;  ///< a "cuda" plan's kernel choice
};

/// A named model input or output and the buffer that holds it.
struct Binding {
  std::string name;
  int32_t buffer = -1;
};

/// The bytes of a plan's weights section: owned (a plan being built, 64-byte aligned storage) or a
/// read-only view into file bytes that a shared owner keeps alive. Copying a plan deep-copies owned
/// bytes and shares a view.
class WeightSection {
 public:
  WeightSection() = default;
  /// A view of `size` bytes at `data` (64-byte aligned), kept alive by `owner`.
  static WeightSection View(std::shared_ptr<const void> owner, const uint8_t* data, uint64_t size);

  /// Appends `nbytes` bytes at the next 64-byte boundary (a view is first copied into owned
  /// storage) and returns their offset in the section.
  uint64_t Append(const void* bytes, uint64_t nbytes);

  /// The section's bytes (64-byte aligned; padding between weights is zero).
  const uint8_t* data() const { return view_ != nullptr ? view_ : owned_bytes(); }
  uint64_t size() const { return view_ != nullptr ? view_size_ : owned_size_; }
  /// True when the bytes are a view into a file rather than owned.
  bool is_view() const { return view_ != nullptr; }

 private:
  struct alignas(kPlanAlignment) Block {
    uint8_t bytes[kPlanAlignment];
  };
  const uint8_t* owned_bytes() const {
    return owned_.empty() ? nullptr : reinterpret_cast<const uint8_t*>(owned_.data());
  }

  std::vector<Block> owned_;
  uint64_t owned_size_ = 0;
  std::shared_ptr<const void> owner_;
  const uint8_t* view_ = nullptr;
  uint64_t view_size_ = 0;
};

/// A compiled model: the kernel graph over numbered buffers, the I/O bindings, the weights, and
/// free-form metadata (fingerprint, qcc version, precision, calibration method...).
struct Plan {
  std::string target = "cpu";  ///< "cpu" or kCudaTarget: the backend the steps were lowered for
  int64_t batch_min = 1;
  int64_t batch_max = 1;
  uint64_t arena_bytes = 0;  ///< arena size at batch_max
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;
  std::vector<Binding> inputs;
  std::vector<Binding> outputs;
  std::vector<PlanWeight> weights;
  std::map<std::string, std::string> metadata;
  WeightSection weight_data;

  /// Copies `nbytes` bytes into the weights section, records a PlanWeight and returns its index.
  int32_t AddWeight(std::string name, DType dtype, std::vector<int64_t> dims, const void* bytes,
                    uint64_t nbytes);
  /// The bytes of weight `i`; empty when `i` or its extent is out of range (never on a validated
  /// plan).
  absl::Span<const uint8_t> Weight(int32_t i) const;
};

/// Bytes buffer `b` occupies at batch `batch` (dims[0] == -1 takes `batch`); nullopt when an
/// extent is invalid or the size overflows.
std::optional<uint64_t> BufferBytes(const PlanBuffer& b, int64_t batch);

/// Checks every invariant a runtime relies on (ids, offsets and sizes in range, dtypes defined,
/// bindings complete and unique). Errors are InvalidArgument: "<source>: invalid plan: <what>".
absl::Status ValidatePlan(const Plan& plan, absl::string_view source);

/// "arena", "input", "output", "weight".
absl::string_view BufferKindName(BufferKind kind);

}  // namespace qcc::runtime

#endif  // QCC_RUNTIME_PLAN_H_
