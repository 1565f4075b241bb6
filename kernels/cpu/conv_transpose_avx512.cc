// AVX-512 path of the fp32 transposed convolution for the learned 2x upsampling of decoders
// (DBNet's and U-Net's heads: ConvTranspose 2x2, stride 2, no pads): kernel == stride, so the
// taps of different inputs never meet and every output is one input position's dot product,
// y[m, 2 iy + ky, 2 ix + kx] = bias[m] + sum over c of x[c, iy, ix] * w[c, m, ky, kx]. The
// general path (conv_transpose.cc) writes W^T x to a scratch of 4 x the output's size and
// scatters it back with a strided add per element: ppocr-det-v3's 24 -> 24 channel one on
// 160x160 took 5.7 ms at batch 1 (its 59 M multiply-adds take 1.0 ms at this CPU's fp32 peak).
// Here each output row pair is computed in registers and stored once.
//
// Compiled for any x86-64: only the QCC_AVX512 functions use AVX-512, called on CPUs that report
// avx512f.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/conv_avx512_internal.h"
#include "kernels/cpu/conv_transpose.h"
#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/nn_parallel.h"

namespace qcc::cpu::internal {

namespace {

/// Input columns a register block covers: two vectors of 16.
constexpr int64_t kBlock = 32;

/// Output rows 2 iy and 2 iy + 1 of channel m of one image, from its input row iy (x: the
/// image's C planes of h x w, y: channel m's plane of 2h x 2w). Per block of 32 input columns,
/// 8 accumulators (2 vectors x 4 taps) start at the bias and take one multiply-add per
/// channel in channel order; then each tap row's kx = 0 and kx = 1 vectors are interleaved into
/// 64 output columns.
QCC_AVX512 void UpsampleRow(const float* x, const float* w, float bias, int64_t c_len,
                            int64_t plane, int64_t width, int64_t m_len, int64_t iy, float* y) {
  const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_idx = _mm512_add_epi32(lo_idx, _mm512_set1_epi32(8));
  const float* xrow = x + iy * width;
  for (int64_t x0 = 0; x0 < width; x0 += kBlock) {
    const __mmask16 m0 = LowBits16(width - x0), m1 = LowBits16(width - x0 - 16);
    __m512 acc[2][4];
    for (auto& v : acc) {
      for (__m512& a : v) a = _mm512_set1_ps(bias);
    }
    const float* xc = xrow + x0;
    const float* wc = w;  // w[c, m, ky, kx]: 4 floats per (c, m), m_len * 4 apart per c
    for (int64_t c = 0; c < c_len; ++c, xc += plane, wc += m_len * 4) {
      const __m512 a = _mm512_maskz_loadu_ps(m0, xc);
      const __m512 b = _mm512_maskz_loadu_ps(m1, xc + 16);
      for (int t = 0; t < 4; ++t) {
        const __m512 wt = _mm512_set1_ps(wc[t]);
        acc[0][t] = _mm512_fmadd_ps(a, wt, acc[0][t]);
        acc[1][t] = _mm512_fmadd_ps(b, wt, acc[1][t]);
      }
    }
    // Tap t = 2 ky + kx; output row 2 iy + ky, columns 2 (x0 + i) + kx.
    for (int ky = 0; ky < 2; ++ky) {
      float* out = y + (2 * iy + ky) * 2 * width + 2 * x0;
      const int64_t left = 2 * (width - x0);  // output columns from `out` on
      for (int v = 0; v < 2; ++v) {
        const __m512 k0 = acc[v][2 * ky], k1 = acc[v][2 * ky + 1];
        const int64_t at = 32 * v;
        _mm512_mask_storeu_ps(out + at, LowBits16(left - at),
                              _mm512_permutex2var_ps(k0, lo_idx, k1));
        _mm512_mask_storeu_ps(out + at + 16, LowBits16(left - at - 16),
                              _mm512_permutex2var_ps(k0, hi_idx, k1));
      }
    }
  }
}

}  // namespace

bool ConvTransposeUpsample2xApplies(const ConvF32Params& fwd) {
  return fwd.groups == 1 && fwd.kernel[0] == 1 && fwd.stride[0] == 1 && fwd.pad[0] == 0 &&
         fwd.in[0] == fwd.out[0] && fwd.kernel[1] == 2 && fwd.kernel[2] == 2 &&
         fwd.stride[1] == 2 && fwd.stride[2] == 2 && fwd.pad[1] == 0 && fwd.pad[2] == 0 &&
         fwd.in[1] == 2 * fwd.out[1] && fwd.in[2] == 2 * fwd.out[2];
}

QCC_AVX512 void ConvTransposeUpsample2xAvx512(const ConvF32Params& fwd, const float* x,
                                              const float* w, const float* bias, float* y) {
  const int64_t c_len = fwd.out_channels, m_len = fwd.in_channels;
  const int64_t depth = fwd.out[0], h = fwd.out[1], width = fwd.out[2];
  const int64_t x_plane = h * width, y_plane = 4 * x_plane;
  // Units: (image, depth slice, input row, output channel), the channel fastest: the C input
  // rows a unit reads stay in L1 for every output channel, where channel-major order read all
  // of x once per output channel (ppocr-det-v3's first one, whose x is 2.4 MB at a 640x640
  // input: 2.53 ms channel-major, 2.12 ms so).
  const int64_t rows = fwd.batch * depth * h * m_len;
  NnParallelFor(fwd.num_threads, rows, c_len * width * 4, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t m = u % m_len, iy = u / m_len % h, z = u / (m_len * h) % depth;
      const int64_t n = u / (m_len * h * depth);
      UpsampleRow(x + (n * c_len * depth + z) * x_plane, w + m * 4,
                  bias != nullptr ? bias[m] : 0.0f, c_len, depth * x_plane, width, m_len, iy,
                  y + ((n * m_len + m) * depth + z) * y_plane);
    }
  });
}

}  // namespace qcc::cpu::internal
