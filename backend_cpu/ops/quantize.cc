// QuantizeLinear and DequantizeLinear on host tensors (ONNX semantics: round half to even,
// saturate to the integer type; per-tensor or per-axis scale and zero point).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"

namespace qcc::cpu {
namespace {

/// For element i of x: its index along `axis` is (i / inner) % channels.
struct AxisWalk {
  int64_t inner = 1;
  int64_t channels = 1;
  int64_t Channel(int64_t i) const { return channels == 1 ? 0 : (i / inner) % channels; }
};

absl::StatusOr<AxisWalk> WalkFor(const OpContext& ctx, int64_t axis) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  AxisWalk w;
  if (scale.numel() == 1) return w;
  int64_t a = axis < 0 ? axis + x.rank() : axis;
  if (a < 0 || a >= x.rank() || x.dim(a) != scale.numel()) {
    return ctx.Error(absl::StrCat("a scale of ", scale.numel(), " entries does not match axis ",
                                  axis, " of the input"));
  }
  w.channels = scale.numel();
  for (int64_t d = a + 1; d < x.rank(); ++d) w.inner *= x.dim(d);
  return w;
}

template <typename Q>
void QuantizeInto(const float* x, int64_t n, const AxisWalk& w, const Tensor& scale,
                  const Tensor* zero_point, Q* y) {
  constexpr double lo = std::numeric_limits<Q>::min();
  constexpr double hi = std::numeric_limits<Q>::max();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = w.Channel(i);
    const double zp = zero_point ? zero_point->GetAsDouble(c) : 0.0;
    // ONNX computes x / scale in the input's precision (fp32), then rounds half to even.
    const float q = x[i] / static_cast<float>(scale.GetAsDouble(c));
    const double v = std::nearbyint(static_cast<double>(q)) + zp;
    y[i] = static_cast<Q>(std::clamp(std::isnan(v) ? 0.0 : v, lo, hi));
  }
}

absl::Status RunQuantizeLinear(OpContext& ctx) {
  const auto& a = ctx.attrs<ir::QuantizeLinearAttrs>();
  auto walk_or = WalkFor(ctx, a.axis);
  if (!walk_or.ok()) return walk_or.status();
  const AxisWalk walk = *walk_or;
  const Tensor& x = ctx.input(0);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  auto into = [&](auto* out) {
    QuantizeInto(x.data<float>(), x.numel(), walk, ctx.input(1), zp, out);
    return absl::OkStatus();
  };
  switch (y.dtype()) {
    case DType::kInt8:
      return into(y.data<int8_t>());
    case DType::kUInt8:
      return into(y.data<uint8_t>());
    case DType::kInt16:
      return into(y.data<int16_t>());
    case DType::kUInt16:
      return into(y.data<uint16_t>());
    case DType::kInt32:
      return into(y.data<int32_t>());
    default:
      return ctx.Unsupported(absl::StrCat("no CPU QuantizeLinear to ", DTypeName(y.dtype())));
  }
}

absl::Status RunDequantizeLinear(OpContext& ctx) {
  const auto& a = ctx.attrs<ir::DequantizeLinearAttrs>();
  auto walk_or = WalkFor(ctx, a.axis);
  if (!walk_or.ok()) return walk_or.status();
  const AxisWalk walk = *walk_or;
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  float* y = ctx.output(0).data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = walk.Channel(i);
    // (x - zero_point) is exact in int32 for every supported type; then one fp32 multiply.
    const int64_t d = static_cast<int64_t>(x.GetAsDouble(i)) -
                      (zp ? static_cast<int64_t>(zp->GetAsDouble(c)) : 0);
    y[i] = static_cast<float>(d) * static_cast<float>(scale.GetAsDouble(c));
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterQuantizeOps(OpRegistry& registry) {
  registry.Add(ir::OpKind::kQuantizeLinear, RunQuantizeLinear);
  registry.Add(ir::OpKind::kDequantizeLinear, RunDequantizeLinear);
}

}  // namespace qcc::cpu
