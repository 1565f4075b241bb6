// The data-movement step kinds on the device, for any dtype (bytes moved, never converted):
// Reshape (a device-to-device copy, nothing when the buffers alias), Transpose, Slice and Pad
// (movement_bodies.h), and Cast (f16 <-> f32, elementwise_bodies.h).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/movement_bodies.h"
#include "runtime/cuda/device_launch.h"
#include "runtime/cuda/device_steps.h"
#include "runtime/step_exec.h"
#include "support/float16.h"

namespace qcc::runtime::cuda_exec {
namespace {

namespace kc = ::qcc::cuda;

int32_t ElemSize(const DeviceRunContext& c) {
  return static_cast<int32_t>(DTypeSize(c.plan->buffers[c.step->inputs[0]].dtype));
}

absl::Status CheckMovable(const DevicePrepareContext& c) {
  const PlanBuffer& x = c.input(0);
  const size_t size = DTypeSize(x.dtype);
  if (size != 1 && size != 2 && size != 4 && size != 8) {
    return c.Unimplemented(absl::StrCat("moving ", DTypeName(x.dtype), " elements"));
  }
  if (x.dims.size() > static_cast<size_t>(kc::kMaxBodyRank) ||
      c.output(0).dims.size() > static_cast<size_t>(kc::kMaxBodyRank)) {
    return c.Unimplemented(
        absl::StrCat("rank ", x.dims.size(), " is over the CUDA kernel's ", kc::kMaxBodyRank));
  }
  return absl::OkStatus();
}

// ---- Reshape ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareReshape(const DevicePrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.Decode<NoStepParams>().status());
  return MakeDeviceStep<NoStepParams>(
      {},
      [](const NoStepParams&, const DeviceRunContext& c) {
        const void* x = c.in<void>(0);
        void* y = c.out<void>(0);
        const size_t bytes = static_cast<size_t>(c.in_elements(0)) * ElemSize(c);
        if (x == y || bytes == 0) return absl::OkStatus();
        return CudaStatus(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, c.stream),
                          absl::StrCat("cudaMemcpyAsync(Reshape '", c.step->name, "')"));
      },
      nullptr, CudaKernel::kAlias);
}

// ---- Transpose ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareTranspose(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const TransposeStepParams p, c.Decode<TransposeStepParams>());
  QCC_RETURN_IF_ERROR(CheckMovable(c));
  return MakeDeviceStep<std::vector<int64_t>>(
      p.perm, [](const std::vector<int64_t>& perm, const DeviceRunContext& c) {
        const PlanBuffer& xb = c.plan->buffers[c.step->inputs[0]];
        const int rank = static_cast<int>(xb.dims.size());
        int64_t x[kc::kMaxBodyRank];
        int64_t n = 1;
        for (int k = 0; k < rank; ++k) n *= x[k] = ExtentAt(xb, k, c.batch);
        if (n == 0) return absl::OkStatus();
        kc::StridedCopyArgs a;
        kc::MakeTransposeArgs(x, rank, perm.data(), ElemSize(c), c.in<void>(0), c.out<void>(0), &a);
        return Launch<kc::TransposeBody>(c, n, a, "TransposeBody");
      });
}

// ---- Slice ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareSlice(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const SliceStepParams p, c.Decode<SliceStepParams>());
  QCC_RETURN_IF_ERROR(CheckMovable(c));
  return MakeDeviceStep<SliceStepParams>(
      p, [](const SliceStepParams& p, const DeviceRunContext& c) {
        const PlanBuffer& xb = c.plan->buffers[c.step->inputs[0]];
        const PlanBuffer& yb = c.plan->buffers[c.step->outputs[0]];
        const int rank = static_cast<int>(xb.dims.size());
        int64_t x[kc::kMaxBodyRank], y[kc::kMaxBodyRank];
        int64_t n = 1;
        for (int k = 0; k < rank; ++k) {
          x[k] = ExtentAt(xb, k, c.batch);
          n *= y[k] = ExtentAt(yb, k, c.batch);
        }
        if (n == 0) return absl::OkStatus();
        kc::StridedCopyArgs a;
        kc::MakeSliceArgs(x, y, rank, p.starts.data(), p.steps.data(), ElemSize(c), c.in<void>(0),
                          c.out<void>(0), &a);
        return Launch<kc::SliceBody>(c, n, a, "SliceBody");
      });
}

// ---- Pad ----

struct PadState {
  std::vector<int64_t> pads;
  uint64_t fill_bits = 0;
};

// The fill element's bits, as runtime's PadFill writes it (the CPU engine checked the range).
uint64_t FillBits(DType dtype, const PadStepParams& p) {
  switch (dtype) {
    case DType::kFloat32: {
      uint32_t bits;
      std::memcpy(&bits, &p.value, 4);
      return bits;
    }
    case DType::kFloat16:
      return FloatToHalf(p.value);
    case DType::kInt8:
      return static_cast<uint8_t>(static_cast<int8_t>(p.int_value));
    case DType::kUInt8:
      return static_cast<uint8_t>(p.int_value);
    case DType::kInt32:
      return static_cast<uint32_t>(static_cast<int32_t>(p.int_value));
    default:
      return static_cast<uint64_t>(p.int_value);
  }
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PreparePad(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const PadStepParams p, c.Decode<PadStepParams>());
  QCC_RETURN_IF_ERROR(CheckMovable(c));
  return MakeDeviceStep<PadState>({p.pads, FillBits(c.input(0).dtype, p)},
                                  [](const PadState& s, const DeviceRunContext& c) {
                                    const PlanBuffer& xb = c.plan->buffers[c.step->inputs[0]];
                                    const int rank = static_cast<int>(xb.dims.size());
                                    kc::PadArgs a;
                                    a.x = c.in<void>(0);
                                    a.y = c.out<void>(0);
                                    a.elem_size = ElemSize(c);
                                    a.rank = rank;
                                    a.fill_bits = s.fill_bits;
                                    int64_t n = 1;
                                    for (int k = 0; k < rank; ++k) {
                                      a.in_dims[k] = ExtentAt(xb, k, c.batch);
                                      a.pad_begin[k] = s.pads[k];
                                      a.out_dims[k] = a.in_dims[k] + s.pads[k] + s.pads[k + rank];
                                      n *= a.out_dims[k];
                                    }
                                    if (n == 0) return absl::OkStatus();
                                    return Launch<kc::PadBody>(c, n, a, "PadBody");
                                  });
}

// ---- Cast ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareCast(const DevicePrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.Decode<NoStepParams>().status());
  const bool widen = c.input(0).dtype == DType::kFloat16;
  return MakeDeviceStep<bool>(widen, [](const bool& widen, const DeviceRunContext& c) {
    const int64_t n = c.in_elements(0);
    if (widen) {
      return Launch<kc::CastF16ToF32Body>(c, n, {c.in<uint16_t>(0), c.out<float>(0)},
                                          "CastF16ToF32Body");
    }
    return Launch<kc::CastF32ToF16Body>(c, n, {c.in<float>(0), c.out<uint16_t>(0)},
                                        "CastF32ToF16Body");
  });
}

}  // namespace

void RegisterDeviceMovementSteps(DeviceStepRegistry& r) {
  r.Add(StepKind::kReshape, PrepareReshape);
  r.Add(StepKind::kTranspose, PrepareTranspose);
  r.Add(StepKind::kSlice, PrepareSlice);
  r.Add(StepKind::kPad, PreparePad);
  r.Add(StepKind::kCast, PrepareCast);
}

}  // namespace qcc::runtime::cuda_exec
