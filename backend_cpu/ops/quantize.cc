// QuantizeLinear and DequantizeLinear on host tensors (ONNX semantics: round half to even,
// saturate to the integer type; per-tensor or per-axis scale and zero point).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"

namespace qcc::cpu {
namespace {

/// x seen as [outer, channels, inner] for a scale along `axis` (channels 1: one scale).
struct AxisWalk {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
};

absl::StatusOr<AxisWalk> WalkFor(const OpContext& ctx, int64_t axis) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  AxisWalk w;
  if (scale.numel() == 1) {
    w.inner = x.numel();
    return w;
  }
  int64_t a = axis < 0 ? axis + x.rank() : axis;
  if (a < 0 || a >= x.rank() || x.dim(a) != scale.numel()) {
    return ctx.Error(absl::StrCat("a scale of ", scale.numel(), " entries does not match axis ",
                                  axis, " of the input"));
  }
  w.channels = scale.numel();
  for (int64_t d = 0; d < a; ++d) w.outer *= x.dim(d);
  for (int64_t d = a + 1; d < x.rank(); ++d) w.inner *= x.dim(d);
  return w;
}

/// Each channel's scale (as fp32, what ONNX computes in) and zero point (0 without one), read
/// once instead of per element.
struct ChannelParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
};

ChannelParams ParamsOf(const Tensor& scale, const Tensor* zero_point, int64_t channels) {
  ChannelParams p;
  p.scale.resize(channels);
  p.zero_point.assign(channels, 0);
  for (int64_t c = 0; c < channels; ++c) {
    p.scale[c] = static_cast<float>(scale.GetAsDouble(c));
    if (zero_point != nullptr) p.zero_point[c] = static_cast<int64_t>(zero_point->GetAsDouble(c));
  }
  return p;
}

template <typename Q>
void QuantizeInto(const float* x, const AxisWalk& w, const ChannelParams& p, Q* y) {
  constexpr double lo = std::numeric_limits<Q>::min();
  constexpr double hi = std::numeric_limits<Q>::max();
  for (int64_t o = 0; o < w.outer; ++o) {
    for (int64_t c = 0; c < w.channels; ++c) {
      const float s = p.scale[c];
      const double zp = static_cast<double>(p.zero_point[c]);
      const int64_t base = (o * w.channels + c) * w.inner;
      for (int64_t i = base; i < base + w.inner; ++i) {
        // ONNX computes x / scale in the input's precision (fp32), then rounds half to even.
        const float q = x[i] / s;
        const double v = std::nearbyint(static_cast<double>(q)) + zp;
        y[i] = static_cast<Q>(std::clamp(std::isnan(v) ? 0.0 : v, lo, hi));
      }
    }
  }
}

absl::Status RunQuantizeLinear(OpContext& ctx) {
  const auto& a = ctx.attrs<ir::QuantizeLinearAttrs>();
  auto walk_or = WalkFor(ctx, a.axis);
  if (!walk_or.ok()) return walk_or.status();
  const AxisWalk walk = *walk_or;
  const Tensor& x = ctx.input(0);
  const ChannelParams params =
      ParamsOf(ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr, walk.channels);
  Tensor& y = ctx.output(0);
  auto into = [&](auto* out) {
    QuantizeInto(x.data<float>(), walk, params, out);
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

/// y = (x - zero_point) * scale per channel; `read(i)` gives element i of x as an integer.
template <typename Read>
void DequantizeInto(Read read, const AxisWalk& w, const ChannelParams& p, float* y) {
  for (int64_t o = 0; o < w.outer; ++o) {
    for (int64_t c = 0; c < w.channels; ++c) {
      const float s = p.scale[c];
      const int64_t zp = p.zero_point[c];
      const int64_t base = (o * w.channels + c) * w.inner;
      for (int64_t i = base; i < base + w.inner; ++i) {
        // (x - zero_point) is exact in int64 for every supported type; then one fp32 multiply.
        y[i] = static_cast<float>(read(i) - zp) * s;
      }
    }
  }
}

absl::Status RunDequantizeLinear(OpContext& ctx) {
  const auto& a = ctx.attrs<ir::DequantizeLinearAttrs>();
  auto walk_or = WalkFor(ctx, a.axis);
  if (!walk_or.ok()) return walk_or.status();
  const AxisWalk walk = *walk_or;
  const Tensor& x = ctx.input(0);
  const ChannelParams params =
      ParamsOf(ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr, walk.channels);
  float* y = ctx.output(0).data<float>();
  auto typed = [&](const auto* data) {
    DequantizeInto([data](int64_t i) { return static_cast<int64_t>(data[i]); }, walk, params, y);
  };
  switch (x.dtype()) {
    case DType::kInt8:
      typed(x.data<int8_t>());
      break;
    case DType::kUInt8:
      typed(x.data<uint8_t>());
      break;
    case DType::kInt16:
      typed(x.data<int16_t>());
      break;
    case DType::kUInt16:
      typed(x.data<uint16_t>());
      break;
    case DType::kInt32:
      typed(x.data<int32_t>());
      break;
    default:  // any other type GetAsDouble reads
      DequantizeInto([&x](int64_t i) { return static_cast<int64_t>(x.GetAsDouble(i)); }, walk,
                     params, y);
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterQuantizeOps(OpRegistry& registry) {
  registry.Add(ir::OpKind::kQuantizeLinear, RunQuantizeLinear);
  registry.Add(ir::OpKind::kDequantizeLinear, RunDequantizeLinear);
}

}  // namespace qcc::cpu
