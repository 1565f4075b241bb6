// int8 convolution: validation, the reference implementation (the contract in qconv.h, written
// as directly as it reads), weight packing and dispatch to the VNNI and AVX2 fast paths.
#include "kernels/cpu/qconv.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qint8_avx2_internal.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/quantize.h"

namespace qcc::cpu {

using internal::Wrap32;

absl::Status ValidateQConvParams(const QConvParams& p) {
  const auto bad = [](auto... parts) {
    return absl::InvalidArgumentError(absl::StrCat("int8 conv: ", parts...));
  };
  if (p.n < 0 || p.c <= 0 || p.h <= 0 || p.w <= 0 || p.k <= 0 || p.r <= 0 || p.s <= 0) {
    return bad("extents must be positive (N may be 0): N=", p.n, " C=", p.c, " H=", p.h, " W=", p.w,
               " K=", p.k, " R=", p.r, " S=", p.s);
  }
  if (p.stride_h <= 0 || p.stride_w <= 0 || p.dilation_h <= 0 || p.dilation_w <= 0) {
    return bad("strides and dilations must be positive");
  }
  if (p.pad_top < 0 || p.pad_left < 0 || p.pad_bottom < 0 || p.pad_right < 0) {
    return bad("pads must be non-negative");
  }
  if (p.group <= 0 || p.c % p.group != 0 || p.k % p.group != 0) {
    return bad("C=", p.c, " and K=", p.k, " must be multiples of group=", p.group);
  }
  if (p.h + p.pad_top + p.pad_bottom < p.dilation_h * (p.r - 1) + 1 ||
      p.w + p.pad_left + p.pad_right < p.dilation_w * (p.s - 1) + 1) {
    return bad("the dilated ", p.r, "x", p.s, " kernel is larger than the padded input");
  }
  if (p.lo < kInt8Min || p.hi > kInt8Max || p.lo > p.hi) {
    return bad("clamp [", p.lo, ", ", p.hi, "] is not within [-128, 127]");
  }
  if (p.residual != nullptr &&
      (p.add.lo < kInt8Min || p.add.hi > kInt8Max || p.add.lo > p.add.hi)) {
    return bad("the fused Add's clamp [", p.add.lo, ", ", p.add.hi, "] is not within [-128, 127]");
  }
  return absl::OkStatus();
}

namespace {

/// The contract over `weights` for output planes [begin, end) of (image, channel).
void ReferencePlanes(const QConvParams& p, const int8_t* weights, int64_t begin, int64_t end) {
  const int64_t oh = p.out_h(), ow = p.out_w();
  const int64_t cg = p.c / p.group, kg = p.k / p.group;
  for (int64_t plane = begin; plane < end; ++plane) {
    const int64_t n = plane / p.k, k = plane % p.k, g = k / kg;
    const int8_t* wk = weights + k * cg * p.r * p.s;
    const int64_t bias = p.bias != nullptr ? p.bias[k] : 0;
    int8_t* out = p.output + plane * oh * ow;
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        int64_t acc = bias;  // exact; |sum| < 2^63 for any real geometry
        for (int64_t c = 0; c < cg; ++c) {
          const int8_t* in = p.input + (n * p.c + g * cg + c) * p.h * p.w;
          for (int64_t r = 0; r < p.r; ++r) {
            const int64_t iy = y * p.stride_h - p.pad_top + r * p.dilation_h;
            for (int64_t s = 0; s < p.s; ++s) {
              const int64_t ix = x * p.stride_w - p.pad_left + s * p.dilation_w;
              const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
              const int32_t v = inside ? in[iy * p.w + ix] : p.pad_value;
              acc += int64_t{wk[(c * p.r + r) * p.s + s]} * v;
            }
          }
        }
        const int8_t v = Requantize(Wrap32(acc), p.multiplier[k], p.zp_out, p.lo, p.hi);
        if (p.residual == nullptr) {
          out[y * ow + x] = v;
        } else {
          const AddS8Params& a = p.add;
          out[y * ow + x] = AddValue(v, a.zp_a, a.mult_a, p.residual[plane * oh * ow + y * ow + x],
                                     a.zp_b, a.mult_b, a.zp_out, a.lo, a.hi);
        }
      }
    }
  }
}

void ReferenceWithWeights(const QConvParams& p, const int8_t* weights) {
  const int64_t cost = p.out_h() * p.out_w() * (p.c / p.group) * p.r * p.s;
  NnParallelFor(p.num_threads, p.n * p.k, cost,
                [&](int64_t begin, int64_t end) { ReferencePlanes(p, weights, begin, end); });
}

}  // namespace

void QConvReference(const QConvParams& p) { ReferenceWithWeights(p, p.weights); }

PackedQConvWeights PackQConvWeights(const QConvParams& p, QKernelPath path) {
  PackedQConvWeights w;
  w.k = p.k;
  w.c_per_group = p.c / p.group;
  w.r = p.r;
  w.s = p.s;
  w.group = p.group;
  w.stride_h = p.stride_h;
  w.stride_w = p.stride_w;
  w.dilation_h = p.dilation_h;
  w.dilation_w = p.dilation_w;
  const int64_t per_k = w.c_per_group * p.r * p.s;
  w.weights.assign(p.weights, p.weights + p.k * per_k);
  w.correction.resize(p.k);
  for (int64_t k = 0; k < p.k; ++k) {
    int64_t sum = 0;
    for (int64_t i = 0; i < per_k; ++i) sum += w.weights[k * per_k + i];
    w.correction[k] = Wrap32(-128 * sum);
  }
  if ((path == QKernelPath::kFastest || path == QKernelPath::kVnni) && QInt8HasVnni()) {
    internal::PackQConvVnni(p, &w, path == QKernelPath::kFastest && QInt8HasAmx());
  } else if (path == QKernelPath::kFastest || path == QKernelPath::kAvx2) {
    if (QInt8HasAvx2()) internal::PackQConvAvx2(p, &w);
  }
  return w;
}

int64_t QConvWorkspaceBytes(const QConvParams& p, const PackedQConvWeights& w) {
  switch (w.layout) {
    case PackedQConvWeights::Layout::kReference:
      return 0;
    case PackedQConvWeights::Layout::kAvx2Direct:
    case PackedQConvWeights::Layout::kAvx2Depthwise:
      return internal::QConvAvx2WorkspaceBytes(p, w);
    default:
      return internal::QConvVnniWorkspaceBytes(p, w);
  }
}

void QConv(const QConvParams& p, const PackedQConvWeights& w, void* workspace) {
  if (p.n == 0) return;
  if (p.residual != nullptr && !internal::QConvFusesResidual(p, w)) {
    // The conv, then the Add over its output in place (the same bits: AddS8 is AddValue).
    QConvParams conv = p;
    conv.residual = nullptr;
    QConv(conv, w, workspace);
    AddS8(p.add, p.n * p.k * p.out_h() * p.out_w(), p.output, p.residual, p.output, p.num_threads);
    return;
  }
  // The fast paths need finite multipliers and an int8 zp_out (qint8_vnni_internal.h); the
  // compiler never emits anything else, but the contract holds for any input.
  if (w.layout == PackedQConvWeights::Layout::kReference ||
      !internal::VnniRequantApplies(p.multiplier, p.k, p.zp_out)) {
    ReferenceWithWeights(p, w.weights.data());
  } else if (w.layout == PackedQConvWeights::Layout::kAvx2Direct ||
             w.layout == PackedQConvWeights::Layout::kAvx2Depthwise) {
    internal::QConvAvx2(p, w, workspace);
  } else {
    internal::QConvVnni(p, w, workspace);
  }
}

}  // namespace qcc::cpu
