// Pieces shared by the convolution kernels (conv.cc, conv_avx512.cc); not a public header.
#ifndef QCC_KERNELS_CPU_CONV_INTERNAL_H_
#define QCC_KERNELS_CPU_CONV_INTERNAL_H_

#include <cstdint>

#include "kernels/cpu/conv.h"

namespace qcc::cpu::internal {

/// Output positions [lo, hi) along one axis whose input index o * s + i0 lies in [0, in).
void ValidRange(int64_t i0, int64_t s, int64_t in, int64_t out, int64_t& lo, int64_t& hi);

/// im2col of `channels` planes of one image's x over output rows [r0, r1) (a row is the
/// innermost output axis): row (c * kernel_size + tap) of `col`, row stride `ld`, starting at
/// column `col_offset`; zeros where a tap falls outside x. Parallel over channels.
void Im2colRowsF32(const ConvF32Params& p, int64_t channels, const float* x, int64_t r0, int64_t r1,
                   float* col, int64_t ld, int64_t col_offset, int num_threads);

/// dst[i] = src[2 * i] for i < n, 8 at a time, nothing read past src[2 * (n - 1)]: a stride-2
/// im2col or phase-plane row (conv_avx2.cc; call only on a CPU with AVX2).
void CopyEvenAvx2(const float* src, int64_t n, float* dst);

/// A row stride of at least `floats` floats spanning an odd number of 64-byte lines, so that
/// consecutive rows of a buffer fall in different L1 sets.
inline int64_t OddLineStride(int64_t floats) {
  const int64_t lines = (floats + 15) / 16;
  return (lines | 1) * 16;
}

/// w ([M, C/groups, kernel]) packed for a microkernel with `rows` output channels per tile:
/// each group's channels in blocks of `rows`, k-major, k in w's (channel, tap) order:
/// packed[(group, block)][k][r] = w[group's channel block * rows + r][k], zero past the group's
/// last channel. groups * ceil(M/groups / rows) * rows * k floats.
void PackWeightRowBlocks(const ConvF32Params& p, const float* w, int64_t rows, float* packed);

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_CONV_INTERNAL_H_
