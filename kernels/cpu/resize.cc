#include "kernels/cpu/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/container/inlined_vector.h"

namespace qcc::cpu {
namespace {

/// Keys' cubic convolution weights for the four taps left-1, left, left+1, left+2 of a source
/// coordinate whose distance from `left` is `r` in (0, 1].
void CubicWeights(double r, double a, double* w) {
  auto near = [a](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [a](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = far(r + 1);
  w[1] = near(r);
  w[2] = near(1 - r);
  w[3] = far(2 - r);
}

}  // namespace

double ResizeSourceCoord(const ResizeAxisParams& p, int64_t x_out, bool* extrapolate) {
  const double x = static_cast<double>(x_out);
  const double in = static_cast<double>(p.in_extent);
  const double out_width = p.scale * in;  // the reference's (fractional) output width
  *extrapolate = false;
  switch (p.coord) {
    case ResizeCoordMode::kHalfPixel:
      return (x + 0.5) / p.scale - 0.5;
    case ResizeCoordMode::kAsymmetric:
      return x / p.scale;
    case ResizeCoordMode::kPytorchHalfPixel:
      return out_width == 1.0 ? -0.5 : (x + 0.5) / p.scale - 0.5;
    case ResizeCoordMode::kAlignCorners:
      return out_width == 1.0 ? 0.0 : x * (in - 1) / (out_width - 1);
    case ResizeCoordMode::kTfCropAndResize: {
      const double span = (p.roi_end - p.roi_start) * (in - 1);
      double src = out_width == 1.0 ? span / 2 : x * span / (out_width - 1);
      src += p.roi_start * (in - 1);
      *extrapolate = src < 0 || src > in - 1;
      return src;
    }
    case ResizeCoordMode::kTfHalfPixelForNn:
      return (x + 0.5) / p.scale;
    case ResizeCoordMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(p.out_extent) / out_width;
      const double offset = in / 2 * (1 - adjustment);
      return offset + (x + 0.5) / p.scale - 0.5;
    }
  }
  return 0.0;
}

ResizeTaps MakeResizeTaps(const ResizeAxisParams& p) {
  ResizeTaps t;
  t.taps = p.filter == ResizeFilter::kNearest ? 1 : (p.filter == ResizeFilter::kLinear ? 2 : 4);
  t.index.assign(p.out_extent * t.taps, -1);
  t.weight.assign(p.out_extent * t.taps, 0.0f);
  t.identity = p.out_extent == p.in_extent;
  const int64_t last = p.in_extent - 1;
  for (int64_t j = 0; j < p.out_extent; ++j) {
    bool extrapolate = false;
    const double x = ResizeSourceCoord(p, j, &extrapolate);
    int64_t* idx = &t.index[j * t.taps];
    float* w = &t.weight[j * t.taps];
    if (extrapolate || p.in_extent == 0) {
      t.identity = false;
      continue;
    }
    // The left neighbour and the distance r in (0, 1] from it: an integral x counts as
    // distance 1 from x - 1, as in the reference.
    const double fl = std::floor(x);
    const bool integral = x == fl;
    const int64_t left = static_cast<int64_t>(fl) - (integral ? 1 : 0);
    const double r = integral ? 1.0 : x - fl;
    double wd[4] = {0, 0, 0, 0};
    int64_t first = left;  // source coordinate of tap 0
    switch (p.filter) {
      case ResizeFilter::kNearest: {
        bool right = true;  // integral x: x itself, the right neighbour
        if (!integral) {
          switch (p.rounding) {
            case ResizeRounding::kRoundPreferFloor:
              right = r > 0.5;
              break;
            case ResizeRounding::kRoundPreferCeil:
              right = r >= 0.5;
              break;
            case ResizeRounding::kFloor:
              right = false;
              break;
            case ResizeRounding::kCeil:
              right = true;
              break;
          }
        }
        first = right ? left + 1 : left;
        wd[0] = 1.0;
        break;
      }
      case ResizeFilter::kLinear:
        wd[0] = 1 - r;
        wd[1] = r;
        break;
      case ResizeFilter::kCubic:
        first = left - 1;
        CubicWeights(r, p.cubic_a, wd);
        break;
    }
    if (p.exclude_outside && t.taps > 1) {
      double sum = 0;
      for (int k = 0; k < t.taps; ++k) {
        if (first + k < 0 || first + k > last) wd[k] = 0;
        sum += wd[k];
      }
      if (sum != 0) {
        for (int k = 0; k < t.taps; ++k) wd[k] /= sum;
      }
    }
    for (int k = 0; k < t.taps; ++k) {
      idx[k] = std::clamp<int64_t>(first + k, 0, last);
      w[k] = static_cast<float>(wd[k]);
      if (w[k] != 0.0f && (idx[k] != j || w[k] != 1.0f)) t.identity = false;
    }
  }
  return t;
}

int64_t ResizeF32ScratchFloats(absl::Span<const int64_t> in_dims,
                               absl::Span<const ResizeTaps> taps) {
  // Every intermediate result (after a resampled axis that is not the last one) fits in one
  // half: the largest of them.
  absl::InlinedVector<int64_t, 8> dims(in_dims.begin(), in_dims.end());
  size_t final_axis = dims.size();
  for (size_t k = 0; k < dims.size(); ++k) {
    if (!taps[k].identity) final_axis = k;
  }
  int64_t largest = 0;
  for (size_t k = 0; k < final_axis; ++k) {
    if (taps[k].identity) continue;
    dims[k] = taps[k].out_extent();
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    largest = std::max(largest, n);
  }
  return 2 * largest;
}

void ResizeF32(absl::Span<const int64_t> in_dims, absl::Span<const ResizeTaps> taps,
               float extrapolation_value, const float* in, float* out) {
  std::vector<float> scratch(ResizeF32ScratchFloats(in_dims, taps));
  ResizeF32(in_dims, taps, extrapolation_value, in, out, scratch.data());
}

void ResizeF32(absl::Span<const int64_t> in_dims, absl::Span<const ResizeTaps> taps,
               float extrapolation_value, const float* in, float* out, float* scratch) {
  const size_t rank = in_dims.size();
  absl::InlinedVector<int64_t, 8> dims(in_dims.begin(), in_dims.end());
  int64_t numel = 1;
  for (int64_t d : dims) numel *= d;
  size_t final_axis = rank;  // the last axis that is resampled
  for (size_t k = 0; k < rank; ++k) {
    if (!taps[k].identity) final_axis = k;
  }
  if (final_axis == rank) {
    if (numel > 0) std::memcpy(out, in, numel * sizeof(float));
    return;
  }
  // Ping-pong between the two halves of the scratch.
  const int64_t half = ResizeF32ScratchFloats(in_dims, taps) / 2;
  float* buffer[2] = {scratch, scratch + half};
  int next_buffer = 0;
  const float* src = in;
  for (size_t k = 0; k <= final_axis; ++k) {
    const ResizeTaps& t = taps[k];
    if (t.identity) continue;
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < k; ++i) outer *= dims[i];
    for (size_t i = k + 1; i < rank; ++i) inner *= dims[i];
    const int64_t in_extent = dims[k];
    const int64_t out_extent = t.out_extent();
    float* dst = out;
    if (k != final_axis) {
      dst = buffer[next_buffer];
      next_buffer ^= 1;
    }
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < out_extent; ++j) {
        float* row = dst + (o * out_extent + j) * inner;
        const int64_t* idx = &t.index[j * t.taps];
        const float* w = &t.weight[j * t.taps];
        if (idx[0] < 0) {
          std::fill(row, row + inner, extrapolation_value);
          continue;
        }
        std::fill(row, row + inner, 0.0f);
        for (int tap = 0; tap < t.taps; ++tap) {
          if (w[tap] == 0.0f) continue;
          const float* s = src + (o * in_extent + idx[tap]) * inner;
          for (int64_t i = 0; i < inner; ++i) row[i] += w[tap] * s[i];
        }
      }
    }
    dims[k] = out_extent;
    src = dst;
  }
}

}  // namespace qcc::cpu
