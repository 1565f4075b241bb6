#include "backend_cuda/lowering.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/steps.h"
#include "support/status.h"

// ChooseStep's switch lists every step kind: a missing one is a build error, not a silent index
// kernel.
#pragma GCC diagnostic error "-Wswitch"

namespace qcc::cuda {
namespace {

using runtime::CudaKernel;
using runtime::Plan;
using runtime::PlanBuffer;
using runtime::PlanStep;
using runtime::StepKind;

// IMMA (and our packing of every GEMM operand) wants m, k and leading dimensions in multiples of 4.
int64_t RoundUp4(int64_t x) { return (x + 3) / 4 * 4; }

absl::Status StepError(const Plan& plan, size_t i, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("step ", i, " '", plan.steps[i].name, "' (",
                                                 runtime::StepKindName(plan.steps[i].kind),
                                                 "): ", what));
}

// The weight operand `input` of step i, required to have `rank` dims.
absl::StatusOr<const PlanBuffer*> WeightOperand(const Plan& plan, size_t i, size_t input,
                                                size_t rank) {
  const PlanStep& step = plan.steps[i];
  if (step.inputs.size() <= input || step.inputs[input] < 0 ||
      static_cast<size_t>(step.inputs[input]) >= plan.buffers.size()) {
    return StepError(plan, i, absl::StrCat("has no operand ", input));
  }
  const PlanBuffer& w = plan.buffers[step.inputs[input]];
  if (w.dims.size() != rank) {
    return StepError(
        plan, i, absl::StrCat("operand ", input, " has rank ", w.dims.size(), ", expected ", rank));
  }
  return &w;
}

// One step's kernel and its description for people.
struct Choice {
  CudaKernel kernel;
  std::string description;
};

absl::StatusOr<Choice> ChooseStep(const Plan& plan, size_t i) {
  const PlanStep& step = plan.steps[i];
  const auto kind = static_cast<StepKind>(step.kind);
  const absl::string_view name = runtime::StepKindName(step.kind);
  auto choice = [](CudaKernel k, auto&&... parts) { return Choice{k, absl::StrCat(parts...)}; };
  if (step.kind >= static_cast<uint32_t>(StepKind::kNumStepKinds)) {
    return StepError(plan, i, "unknown step kind");
  }
  // Every kind is listed and there is no default (an error for -Wswitch in this file): a new
  // step kind does not compile until it has a CUDA kernel or a refusal here.
  switch (kind) {
    case StepKind::kQConv:
    case StepKind::kConv: {
      QCC_ASSIGN_OR_RETURN(const PlanBuffer* w, WeightOperand(plan, i, 1, 4));
      if (kind == StepKind::kConv && step.inputs.size() > 3 && step.inputs[3] >= 0) {
        return absl::UnimplementedError(absl::StrCat(
            "step ", i, " '", step.name, "' (", name,
            "): an fp32 conv with a fused residual Add has no CUDA kernel yet; compile with "
            "--target cuda (which does not fuse it)"));
      }
      int64_t group = 1;
      if (kind == StepKind::kQConv) {
        absl::StatusOr<runtime::QConvStepParams> p =
            runtime::DecodeParams<runtime::QConvStepParams>(step);
        if (!p.ok()) return StepError(plan, i, "malformed parameters");
        group = p->geometry.group;
      } else {
        absl::StatusOr<runtime::ConvStepParams> p =
            runtime::DecodeParams<runtime::ConvStepParams>(step);
        if (!p.ok()) return StepError(plan, i, "malformed parameters");
        group = p->geometry.group;
      }
      const int64_t kout = w->dims[0];
      const int64_t kred = w->dims[1] * w->dims[2] * w->dims[3];
      const bool int8 = kind == StepKind::kQConv;
      if (group != 1) {
        return choice(int8 ? CudaKernel::kDirectQConv : CudaKernel::kDirectConv,
                      int8                          ? "int8"
                      : w->dtype == DType::kFloat16 ? "fp32 (fp16 weights widened at load)"
                                                    : "fp32",
                      " NCHW, group ", group, ": one thread per 4 outputs of a row, ", kred,
                      " products each (own kernel", int8 ? ", bit-exact requantize" : "", ")");
      }
      if (int8) {
        return choice(CudaKernel::kIm2colImma, "int8 NCHW: per image, im2col [OH*OW (to 4), ",
                      RoundUp4(kred), "] + cuBLASLt IMMA TN m=OH*OW (to 4) n=", kout,
                      " k=", RoundUp4(kred), " (Kred ", kred, ", weights packed [", RoundUp4(kout),
                      ", ", RoundUp4(kred),
                      "] at load) -> NCHW int32 + requantize epilogue (own, bit-exact)");
      }
      const bool half = w->dtype == DType::kFloat16;
      return choice(half ? CudaKernel::kIm2colHalfGemm : CudaKernel::kIm2colGemm,
                    half ? "fp16" : "fp32", " NCHW: per image, ",
                    half ? "fp16 im2col [" : "im2col [", kred, ", OH*OW]",
                    half ? "" : " (none for 1x1, stride 1, unpadded)", " + cuBLASLt ",
                    half ? "fp16" : "fp32", " GEMM with fp32 accumulation NN m=OH*OW n=", kout,
                    " k=", kred, " writing NCHW + bias/activation epilogue (own)");
    }
    case StepKind::kQGemm: {
      QCC_ASSIGN_OR_RETURN(const PlanBuffer* w, WeightOperand(plan, i, 1, 2));
      if (!step.outputs.empty() && step.outputs[0] >= 0 &&
          static_cast<size_t>(step.outputs[0]) < plan.buffers.size() &&
          plan.buffers[step.outputs[0]].dtype == DType::kFloat32) {
        return absl::UnimplementedError(absl::StrCat("step ", i, " '", step.name, "' (", name,
                                                     "): an int8 GEMM with an fp32 result has no "
                                                     "CUDA kernel yet; compile with --target cpu"));
      }
      return choice(CudaKernel::kImma, "int8: rows padded to K ", RoundUp4(w->dims[1]),
                    " + cuBLASLt IMMA TN m=", RoundUp4(w->dims[0]), " k=", RoundUp4(w->dims[1]),
                    " (N ", w->dims[0], ", K ", w->dims[1],
                    ") -> int32 + requantize epilogue (own, bit-exact)");
    }
    case StepKind::kGemm:
      return choice(CudaKernel::kGemm,
                    "fp32: cuBLASLt GEMM with fp32 accumulation (alpha, beta, "
                    "transposes as ONNX Gemm) + activation epilogue (own)");
    case StepKind::kReshape:
      return choice(CudaKernel::kAlias, "the input's bytes, copied on the device");
    case StepKind::kUnary:
      // The body runs every function (support/unary_fn.h), but only these have run on a GPU
      // against the CPU's bits so far (tests/gpu); the others wait for a GPU session.
      if (step.ints.empty() || step.ints[0] < 0 ||
          step.ints[0] > static_cast<int64_t>(UnaryFn::kLeakyRelu)) {
        return absl::UnimplementedError(absl::StrCat(
            "step ", i, " '", step.name, "' (", name, "): the unary function ",
            step.ints.empty() ? "unknown" : UnaryFnName(static_cast<UnaryFn>(step.ints[0])),
            " has no CUDA kernel yet (Relu to LeakyRelu have); compile with --target cpu"));
      }
      return choice(CudaKernel::kIndex, name, ": one thread per element (own kernel)");
    case StepKind::kCast:
      if (step.inputs.empty() || step.inputs[0] < 0 ||
          !IsFloat(plan.buffers[step.inputs[0]].dtype)) {
        return absl::UnimplementedError(absl::StrCat(
            "step ", i, " '", step.name, "' (", name,
            "): a Cast from integers has no CUDA kernel yet; compile with --target cpu"));
      }
      return choice(CudaKernel::kIndex, name, ": one thread per element (own kernel)");
    case StepKind::kQConvAdd:
      return absl::UnimplementedError(absl::StrCat(
          "step ", i, " '", step.name, "' (", name,
          "): an int8 conv with a fused residual Add has no CUDA kernel yet; compile with "
          "--target cuda (which does not fuse it)"));
    case StepKind::kGather:
    case StepKind::kMatMul:
    case StepKind::kReduce:
    case StepKind::kLayerNorm:
    case StepKind::kDynamicQGemm:
    case StepKind::kAttention:
    case StepKind::kQAttention:
    case StepKind::kUnaryQuantize:
    case StepKind::kDynamicQGemms:
      // Added for transformers (issue 13) without a GPU to run a kernel on.
    case StepKind::kResize:
    case StepKind::kExpand:
    case StepKind::kBatchAffine:
      // Added for exporters' shape arithmetic (issue 12) without a GPU to run a kernel on.
    case StepKind::kConvTranspose:
      // Added for ppocr-det-v3 in a session whose GPU time was spent.
      return absl::UnimplementedError(
          absl::StrCat("step ", i, " '", step.name, "' (", name,
                       "): this step kind has no CUDA kernel yet; compile with --target cpu"));
    case StepKind::kQuantize:
    case StepKind::kDequantize:
    case StepKind::kRequantize:
    case StepKind::kQAdd:
    case StepKind::kQMaxPool:
    case StepKind::kQAveragePool:
    case StepKind::kQGlobalAveragePool:
    case StepKind::kQLut:
    case StepKind::kQConcat:
    case StepKind::kTranspose:
    case StepKind::kSlice:
    case StepKind::kPad:
    case StepKind::kSoftmax:
    case StepKind::kBinary:
    case StepKind::kMaxPool:
    case StepKind::kAveragePool:
    case StepKind::kGlobalAveragePool:
    case StepKind::kConcat:
      return choice(CudaKernel::kIndex, name, ": one thread per element (own kernel)");
    case StepKind::kNumStepKinds:
      break;  // refused above
  }
  return StepError(plan, i, "unknown step kind");
}

}  // namespace

std::string CudaKernelKey(size_t step) { return absl::StrCat("cuda.kernel.", step); }

absl::Status RecordCudaKernelChoices(Plan& plan) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    QCC_ASSIGN_OR_RETURN(Choice choice, ChooseStep(plan, i));
    plan.steps[i].cuda_kernel = choice.kernel;
    plan.metadata[CudaKernelKey(i)] = std::move(choice.description);
  }
  plan.target = std::string(runtime::kCudaTarget);
  return absl::OkStatus();
}

absl::StatusOr<Plan> LowerToCudaPlan(const ir::Graph& graph, const cpu::LowerOptions& options) {
  cpu::LowerOptions cpu_options = options;
  cpu_options.fuse_steps = false;  // no CUDA kernels for the fused forms
  QCC_ASSIGN_OR_RETURN(Plan plan, cpu::LowerToCpuPlan(graph, cpu_options));
  QCC_RETURN_IF_ERROR(RecordCudaKernelChoices(plan));
  return plan;
}

}  // namespace qcc::cuda
