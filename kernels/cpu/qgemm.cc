// int8 GEMM: the reference implementation (the contract in qgemm.h), weight packing and
// dispatch to the VNNI and AVX2 fast paths; and the CPU checks shared by the int8 kernels.
#include "kernels/cpu/qgemm.h"

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qint8_avx2_internal.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/quantize.h"

namespace qcc::cpu {

bool QInt8HasVnni() { return Cpu().avx512_vnni() && Cpu().avx512vbmi && Cpu().avx512vbmi2; }

bool QInt8HasAmx() { return QInt8HasVnni() && Cpu().avx512_amx(); }

bool QInt8HasAvx2() { return Cpu().avx2; }

namespace {

void ReferenceWithWeights(const QGemmParams& p, const int8_t* b) {
  NnParallelFor(p.num_threads, p.m, p.n * p.k, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      const int8_t* a = p.a + m * p.k;
      for (int64_t n = 0; n < p.n; ++n) {
        const int8_t* bn = b + n * p.k;
        int64_t acc = p.bias != nullptr ? p.bias[n] : 0;  // exact, reduced mod 2^32 below
        for (int64_t k = 0; k < p.k; ++k) acc += int32_t{a[k]} * bn[k];
        if (p.y_f32 != nullptr) {
          float scaled = static_cast<float>(internal::Wrap32(acc)) * p.multiplier[n];
          if (p.row_scale != nullptr) scaled *= p.row_scale[m];
          const float y = scaled + (p.bias_f32 != nullptr ? p.bias_f32[n] : 0.0f);
          p.y_f32[m * p.n + n] = p.add_f32 != nullptr ? y + p.add_f32[m * p.n + n] : y;
          continue;
        }
        p.y[m * p.n + n] = Requantize(internal::Wrap32(acc), p.multiplier[n], p.zp_out, p.lo, p.hi);
      }
    }
  });
}

}  // namespace

void QGemmReference(const QGemmParams& p) { ReferenceWithWeights(p, p.b); }

PackedQGemmWeights PackQGemmWeights(const QGemmParams& p, QKernelPath path) {
  PackedQGemmWeights w;
  w.n = p.n;
  w.k = p.k;
  w.weights.assign(p.b, p.b + p.n * p.k);
  if ((path == QKernelPath::kFastest || path == QKernelPath::kVnni) && QInt8HasVnni()) {
    internal::PackQGemmVnni(p, &w);
  } else if (path == QKernelPath::kFastest || path == QKernelPath::kAvx2) {
    if (QInt8HasAvx2()) internal::PackQGemmAvx2(p, &w);
  }
  return w;
}

void QGemm(const QGemmParams& p, const PackedQGemmWeights& w) {
  if (p.m == 0 || p.n == 0) return;
  if (w.layout == PackedQGemmWeights::Layout::kReference ||
      (p.y_f32 == nullptr && !internal::VnniRequantApplies(p.multiplier, p.n, p.zp_out))) {
    ReferenceWithWeights(p, w.weights.data());
  } else if (w.layout == PackedQGemmWeights::Layout::kVnni) {
    internal::QGemmVnni(p, w);
  } else {
    internal::QGemmAvx2(p, w);
  }
}

}  // namespace qcc::cpu
