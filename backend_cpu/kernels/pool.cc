#include "backend_cpu/kernels/pool.h"

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "backend_cpu/kernels/nn_parallel.h"

namespace qcc::cpu {

namespace {

/// Taps [k0, k1) of a window starting at `start` whose positions start + k * d lie in [lo, hi).
void TapRange(int64_t start, int64_t d, int64_t kernel, int64_t lo, int64_t hi, int64_t& k0,
              int64_t& k1) {
  k0 = start >= lo ? 0 : (lo - start + d - 1) / d;
  k1 = start >= hi ? 0 : std::min(kernel, (hi - start + d - 1) / d);
  k1 = std::max(k0, k1);
}

/// Per axis and output position, the window start and its tap range [k0, k1) inside [lo, hi):
/// computed once per call, not per plane and output (TapRange divides).
struct WindowTable {
  std::array<std::vector<int64_t>, 3> start, k0, k1;

  WindowTable(const PoolF32Params& p, const std::array<int64_t, 3>& lo,
              const std::array<int64_t, 3>& hi) {
    for (int a = 0; a < 3; ++a) {
      start[a].resize(p.out[a]);
      k0[a].resize(p.out[a]);
      k1[a].resize(p.out[a]);
      for (int64_t o = 0; o < p.out[a]; ++o) {
        start[a][o] = o * p.stride[a] - p.pad_begin[a];
        TapRange(start[a][o], p.dilation[a], p.kernel[a], lo[a], hi[a], k0[a][o], k1[a][o]);
      }
    }
  }
};

/// Calls fn(out_index, start, k0, k1) for each output position of one plane, where start and
/// the tap ranges [k0, k1) are per axis (from `table`).
template <typename Fn>
void ForEachWindow(const PoolF32Params& p, const WindowTable& table, Fn&& fn) {
  std::array<int64_t, 3> start, k0, k1;
  int64_t o = 0;
  for (int64_t oz = 0; oz < p.out[0]; ++oz) {
    start[0] = table.start[0][oz];
    k0[0] = table.k0[0][oz];
    k1[0] = table.k1[0][oz];
    for (int64_t oy = 0; oy < p.out[1]; ++oy) {
      start[1] = table.start[1][oy];
      k0[1] = table.k0[1][oy];
      k1[1] = table.k1[1][oy];
      for (int64_t ox = 0; ox < p.out[2]; ++ox, ++o) {
        start[2] = table.start[2][ox];
        k0[2] = table.k0[2][ox];
        k1[2] = table.k1[2][ox];
        fn(o, start, k0, k1);
      }
    }
  }
}

constexpr std::array<int64_t, 3> kZero{0, 0, 0};

}  // namespace

void MaxPoolF32(const PoolF32Params& p, const float* x, float* y, int64_t* indices,
                bool column_major) {
  const int64_t in_sp = p.in_size(), out_sp = p.out_size();
  const int64_t kvol = p.kernel[0] * p.kernel[1] * p.kernel[2];
  const WindowTable table(p, kZero, p.in);
  NnParallelFor(p.num_threads, p.planes, out_sp * kvol, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * in_sp;
      float* yp = y + plane * out_sp;
      if (indices == nullptr) {
        // The first tap, then every tap that is greater: the loop below without its index.
        ForEachWindow(p, table, [&](int64_t o, auto& start, auto& k0, auto& k1) {
          if (k0[0] >= k1[0] || k0[1] >= k1[1] || k0[2] >= k1[2]) {
            yp[o] = std::numeric_limits<float>::lowest();
            return;
          }
          const float* first = xp + ((start[0] + k0[0] * p.dilation[0]) * p.in[1] + start[1] +
                                     k0[1] * p.dilation[1]) *
                                        p.in[2];
          float best = first[start[2] + k0[2] * p.dilation[2]];
          for (int64_t kz = k0[0]; kz < k1[0]; ++kz) {
            const int64_t iz = start[0] + kz * p.dilation[0];
            for (int64_t ky = k0[1]; ky < k1[1]; ++ky) {
              const float* row =
                  xp + (iz * p.in[1] + start[1] + ky * p.dilation[1]) * p.in[2] + start[2];
              for (int64_t kx = k0[2]; kx < k1[2]; ++kx) {
                const float v = row[kx * p.dilation[2]];
                best = v > best ? v : best;
              }
            }
          }
          yp[o] = best;
        });
        continue;
      }
      ForEachWindow(p, table, [&](int64_t o, auto& start, auto& k0, auto& k1) {
        float best = std::numeric_limits<float>::lowest();
        int64_t best_at = -1;
        for (int64_t kz = k0[0]; kz < k1[0]; ++kz) {
          const int64_t iz = start[0] + kz * p.dilation[0];
          for (int64_t ky = k0[1]; ky < k1[1]; ++ky) {
            const int64_t iy = start[1] + ky * p.dilation[1];
            const float* row = xp + (iz * p.in[1] + iy) * p.in[2];
            for (int64_t kx = k0[2]; kx < k1[2]; ++kx) {
              const int64_t ix = start[2] + kx * p.dilation[2];
              if (row[ix] > best || best_at < 0) {
                best = row[ix];
                best_at = (iz * p.in[1] + iy) * p.in[2] + ix;
              }
            }
          }
        }
        yp[o] = best;
        if (best_at < 0) {
          indices[plane * out_sp + o] = -1;
          return;
        }
        if (column_major) {
          const int64_t ix = best_at % p.in[2], iy = best_at / p.in[2] % p.in[1];
          const int64_t iz = best_at / (p.in[2] * p.in[1]);
          best_at = iz + iy * p.in[0] + ix * p.in[0] * p.in[1];
        }
        indices[plane * out_sp + o] = plane * in_sp + best_at;
      });
    }
  });
}

void AveragePoolF32(const PoolF32Params& p, bool count_include_pad, const float* x, float* y) {
  const int64_t in_sp = p.in_size(), out_sp = p.out_size();
  const int64_t kvol = p.kernel[0] * p.kernel[1] * p.kernel[2];
  std::array<int64_t, 3> padded_lo, padded_hi;
  for (int a = 0; a < 3; ++a) {
    padded_lo[a] = -p.pad_begin[a];
    padded_hi[a] = p.in[a] + p.pad_end[a];
  }
  const WindowTable table(p, kZero, p.in);
  NnParallelFor(p.num_threads, p.planes, out_sp * kvol, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * in_sp;
      float* yp = y + plane * out_sp;
      ForEachWindow(p, table, [&](int64_t o, auto& start, auto& k0, auto& k1) {
        float sum = 0.0f;
        for (int64_t kz = k0[0]; kz < k1[0]; ++kz) {
          const int64_t iz = start[0] + kz * p.dilation[0];
          for (int64_t ky = k0[1]; ky < k1[1]; ++ky) {
            const int64_t iy = start[1] + ky * p.dilation[1];
            const float* row = xp + (iz * p.in[1] + iy) * p.in[2];
            for (int64_t kx = k0[2]; kx < k1[2]; ++kx) sum += row[start[2] + kx * p.dilation[2]];
          }
        }
        int64_t count = 1;
        for (int a = 0; a < 3; ++a) {
          int64_t c0 = k0[a], c1 = k1[a];
          if (count_include_pad) {
            TapRange(start[a], p.dilation[a], p.kernel[a], padded_lo[a], padded_hi[a], c0, c1);
          }
          count *= c1 - c0;
        }
        yp[o] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
      });
    }
  });
}

void GlobalAveragePoolF32(int64_t planes, int64_t size, const float* x, float* y, int num_threads) {
  NnParallelFor(num_threads, planes, size, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* xp = x + i * size;
      double sum = 0.0;
      for (int64_t j = 0; j < size; ++j) sum += xp[j];
      y[i] = size > 0 ? static_cast<float>(sum / static_cast<double>(size)) : 0.0f;
    }
  });
}

void GlobalMaxPoolF32(int64_t planes, int64_t size, const float* x, float* y, int num_threads) {
  NnParallelFor(num_threads, planes, size, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* xp = x + i * size;
      float best = std::numeric_limits<float>::lowest();
      for (int64_t j = 0; j < size; ++j) best = std::max(best, xp[j]);
      y[i] = best;
    }
  });
}

}  // namespace qcc::cpu
