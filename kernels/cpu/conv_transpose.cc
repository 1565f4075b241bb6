#include "kernels/cpu/conv_transpose.h"

#include <algorithm>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/nn_parallel.h"

namespace qcc::cpu {

namespace {

/// Adds one col2im row (tap kz, ky, kx over every x position) into the y plane `yc`: the
/// adjoint of the im2col row of the same tap.
void Col2imRow(const ConvF32Params& p, const float* src, int64_t kz, int64_t ky, int64_t kx,
               float* yc) {
  const int64_t ow = p.out[2], oh = p.out[1], sx = p.stride[2];
  const int64_t ix0 = kx * p.dilation[2] - p.pad[2];
  // Output columns whose input column lies inside y.
  int64_t lo = ix0 >= 0 ? 0 : (-ix0 + sx - 1) / sx;
  int64_t hi = p.in[2] - ix0 <= 0 ? 0 : (p.in[2] - ix0 - 1) / sx + 1;
  lo = std::min(lo, ow);
  hi = std::max(lo, std::min(hi, ow));
  for (int64_t oz = 0; oz < p.out[0]; ++oz) {
    const int64_t iz = oz * p.stride[0] - p.pad[0] + kz * p.dilation[0];
    if (iz < 0 || iz >= p.in[0]) {
      src += oh * ow;
      continue;
    }
    for (int64_t oy = 0; oy < oh; ++oy, src += ow) {
      const int64_t iy = oy * p.stride[1] - p.pad[1] + ky * p.dilation[1];
      if (iy < 0 || iy >= p.in[1] || lo >= hi) continue;
      float* dst = yc + (iz * p.in[1] + iy) * p.in[2] + lo * sx + ix0;
      for (int64_t i = 0; i < hi - lo; ++i) dst[i * sx] += src[lo + i];
    }
  }
}

}  // namespace

namespace {

bool RunsUpsample2x(const ConvF32Params& fwd) {
  return Cpu().avx512f && internal::ConvTransposeUpsample2xApplies(fwd);
}

}  // namespace

int64_t ConvTransposeF32WorkspaceSize(const ConvF32Params& fwd) {
  if (RunsUpsample2x(fwd)) return 0;
  return fwd.in_channels / fwd.groups * fwd.kernel_size() * fwd.out_size();
}

void ConvTransposeF32Col2im(const ConvF32Params& fwd, const float* x, const float* w,
                            const float* bias, float* y, float* workspace) {
  if (RunsUpsample2x(fwd)) {
    internal::ConvTransposeUpsample2xAvx512(fwd, x, w, bias, y);
    return;
  }
  const int64_t m_total = fwd.in_channels, c_total = fwd.out_channels;
  const int64_t mg = m_total / fwd.groups, cg = c_total / fwd.groups;
  const int64_t kvol = fwd.kernel_size();
  const int64_t x_sp = fwd.out_size(), y_sp = fwd.in_size();
  for (int64_t plane = 0; plane < fwd.batch * m_total; ++plane) {
    std::fill(y + plane * y_sp, y + (plane + 1) * y_sp,
              bias != nullptr ? bias[plane % m_total] : 0.0f);
  }
  if (x_sp == 0 || cg == 0) return;
  for (int64_t n = 0; n < fwd.batch; ++n) {
    for (int64_t g = 0; g < fwd.groups; ++g) {
      // col [mg * kvol, x_sp] = W_g^T [mg * kvol, cg] * x_g [cg, x_sp].
      GemmF32Params gp;
      gp.m = mg * kvol;
      gp.n = x_sp;
      gp.k = cg;
      gp.trans_a = true;
      gp.threads = fwd.num_threads;
      gp.lda = mg * kvol;
      gp.ldb = x_sp;
      gp.ldc = x_sp;
      GemmF32(gp, w + g * cg * mg * kvol, x + (n * c_total + g * cg) * x_sp, workspace);
      float* yg = y + (n * m_total + g * mg) * y_sp;
      // Rows of one channel hit the same y plane: split the work by channel.
      NnParallelFor(fwd.num_threads, mg, kvol * x_sp, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
          for (int64_t k = 0; k < kvol; ++k) {
            const int64_t kx = k % fwd.kernel[2], ky = k / fwd.kernel[2] % fwd.kernel[1];
            const int64_t kz = k / (fwd.kernel[2] * fwd.kernel[1]);
            Col2imRow(fwd, workspace + (m * kvol + k) * x_sp, kz, ky, kx, yg + m * y_sp);
          }
        }
      });
    }
  }
}

}  // namespace qcc::cpu
