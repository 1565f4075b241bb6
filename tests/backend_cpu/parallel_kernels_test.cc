// The memory-bound kernels that split large tensors over threads (unary, Clip, broadcasting
// binary and Where, BatchNorm inference, IndexedCopy/Transpose) give bit-identical results at
// every thread count, match formulas written out here, and the partial broadcast walk covers
// any element range exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise_binary.h"
#include "kernels/cpu/elementwise_unary.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/norm.h"
#include "tests/backend_cpu/elementwise_testing.h"

namespace qcc::cpu {
namespace {

using testing::BroadcastSourceIndex;
using testing::UniformFloats;

constexpr int64_t kLarge = (1 << 20) + 37;  // far above the single-thread threshold, odd tail
constexpr int kThreadCounts[] = {2, 3, 4};

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST(ParallelKernelsTest, UnaryFloatIsBitIdenticalAcrossThreadCounts) {
  const std::vector<float> x = UniformFloats(kLarge, -6.0f, 6.0f, 1);
  for (UnaryFn kind : {UnaryFn::kRelu, UnaryFn::kSigmoid, UnaryFn::kTanh, UnaryFn::kHardSwish,
                       UnaryFn::kHardSigmoid, UnaryFn::kExp}) {
    UnaryCall p;
    p.fn = kind;
    p.alpha = 0.2f;
    p.beta = 0.5f;
    std::vector<float> ref(kLarge);
    UnaryFloat<float>(p, x.data(), ref.data(), kLarge, 1);
    if (kind == UnaryFn::kRelu) {
      for (int64_t i = 0; i < kLarge; ++i) ASSERT_EQ(ref[i], x[i] < 0 ? 0.0f : x[i]);
    }
    for (int threads : kThreadCounts) {
      std::vector<float> y(kLarge, std::nanf(""));
      UnaryFloat<float>(p, x.data(), y.data(), kLarge, threads);
      EXPECT_TRUE(SameBits(y, ref)) << "kind " << static_cast<int>(kind) << ", " << threads;
      std::vector<float> in_place = x;  // x and y may alias
      UnaryFloat<float>(p, in_place.data(), in_place.data(), kLarge, threads);
      EXPECT_TRUE(SameBits(in_place, ref)) << "in place, " << threads << " threads";
    }
  }
}

TEST(ParallelKernelsTest, ClipAndUnaryIntAreBitIdenticalAcrossThreadCounts) {
  const std::vector<float> x = UniformFloats(kLarge, -2.0f, 2.0f, 2);
  std::vector<int32_t> xi(kLarge);
  for (int64_t i = 0; i < kLarge; ++i) xi[i] = static_cast<int32_t>(x[i] * 1000.0f);
  for (int threads : kThreadCounts) {
    std::vector<float> y(kLarge);
    Clip<float>(x.data(), y.data(), kLarge, -0.5f, 1.25f, threads);
    for (int64_t i = 0; i < kLarge; ++i) {
      ASSERT_EQ(y[i], std::min(std::max(x[i], -0.5f), 1.25f)) << i;
    }
    std::vector<int32_t> yi(kLarge);
    UnaryInt<int32_t>(UnaryFn::kAbs, xi.data(), yi.data(), kLarge, threads);
    for (int64_t i = 0; i < kLarge; ++i) ASSERT_EQ(yi[i], std::abs(xi[i])) << i;
  }
}

/// Add over `a_dims` and `b_dims` broadcast to `out`, at `threads` threads.
std::vector<float> AddBroadcast(const Dims& a_dims, const std::vector<float>& a, const Dims& b_dims,
                                const std::vector<float>& b, const Dims& out, int threads) {
  std::vector<float> y(NumElements(out), std::nanf(""));
  BinaryBroadcast(MakeBroadcastPlan({a_dims, b_dims}, out), a.data(), b.data(), y.data(), AddFn(),
                  threads);
  return y;
}

TEST(ParallelKernelsTest, BinaryBroadcastMatchesReferenceAtEveryThreadCount) {
  struct Case {
    Dims a, b;
  };
  // Same shape (one long run), per-channel (runs of 63 cut mid-run by pieces), scalar, an
  // outer broadcast, and both operands broadcasting.
  const Case cases[] = {{{32, 16, 32, 32}, {32, 16, 32, 32}},
                        {{64, 33, 7, 9}, {1, 33, 1, 1}},
                        {{1 << 19}, {1}},
                        {{1, 40, 2051}, {300, 1, 2051}},
                        {{300, 1, 1}, {1, 11, 503}}};
  for (const Case& c : cases) {
    const Dims out = testing::BroadcastShape(c.a, c.b);
    const std::vector<float> a = UniformFloats(NumElements(c.a), -1.0f, 1.0f, 3);
    const std::vector<float> b = UniformFloats(NumElements(c.b), -1.0f, 1.0f, 4);
    const std::vector<float> ref = AddBroadcast(c.a, a, c.b, b, out, 1);
    for (int64_t o = 0; o < NumElements(out); ++o) {
      ASSERT_EQ(ref[o], a[BroadcastSourceIndex(c.a, out, o)] + b[BroadcastSourceIndex(c.b, out, o)])
          << DimsToString(c.a) << " + " << DimsToString(c.b) << " at " << o;
    }
    for (int threads : kThreadCounts) {
      EXPECT_TRUE(SameBits(AddBroadcast(c.a, a, c.b, b, out, threads), ref))
          << DimsToString(c.a) << " + " << DimsToString(c.b) << ", " << threads << " threads";
    }
  }
}

TEST(ParallelKernelsTest, BinaryBroadcastInPlaceOnEitherOperand) {
  const Dims dims{8, 64, 1024}, bias{64, 1};
  const std::vector<float> x = UniformFloats(NumElements(dims), -1.0f, 1.0f, 5);
  const std::vector<float> b = UniformFloats(NumElements(bias), -1.0f, 1.0f, 6);
  const std::vector<float> ref = AddBroadcast(dims, x, bias, b, dims, 1);
  std::vector<float> y = x;
  BinaryBroadcast(MakeBroadcastPlan({dims, bias}, dims), y.data(), b.data(), y.data(), SubFn(), 4);
  for (int64_t o = 0; o < NumElements(dims); ++o) {
    ASSERT_EQ(y[o], x[o] - b[BroadcastSourceIndex(bias, dims, o)]) << o;
  }
  y = x;
  BinaryBroadcast(MakeBroadcastPlan({bias, dims}, dims), b.data(), y.data(), y.data(), AddFn(), 4);
  EXPECT_TRUE(SameBits(y, ref));
}

TEST(ParallelKernelsTest, WhereIsBitIdenticalAcrossThreadCounts) {
  const Dims cond_dims{1, 37, 1}, x_dims{200, 37, 61}, y_dims{61};
  const Dims out{200, 37, 61};
  std::vector<uint8_t> cond(NumElements(cond_dims));
  for (size_t i = 0; i < cond.size(); ++i) cond[i] = (i * 7) % 3 == 0;
  const std::vector<float> x = UniformFloats(NumElements(x_dims), -1.0f, 1.0f, 7);
  const std::vector<float> y = UniformFloats(NumElements(y_dims), -1.0f, 1.0f, 8);
  const BroadcastPlan plan = MakeBroadcastPlan({cond_dims, x_dims, y_dims}, out);
  std::vector<float> ref(NumElements(out));
  SelectBroadcast(plan, cond.data(), x.data(), y.data(), ref.data(), 1);
  for (int64_t o = 0; o < NumElements(out); ++o) {
    const float want = cond[BroadcastSourceIndex(cond_dims, out, o)]
                           ? x[BroadcastSourceIndex(x_dims, out, o)]
                           : y[BroadcastSourceIndex(y_dims, out, o)];
    ASSERT_EQ(ref[o], want) << o;
  }
  for (int threads : kThreadCounts) {
    std::vector<float> got(NumElements(out), std::nanf(""));
    SelectBroadcast(plan, cond.data(), x.data(), y.data(), got.data(), threads);
    EXPECT_TRUE(SameBits(got, ref)) << threads << " threads";
  }
}

TEST(ParallelKernelsTest, BroadcastRunRangesCoverExactlyTheRange) {
  const Dims a{5, 1, 7}, b{1, 6, 7}, c{5, 6, 1}, out{5, 6, 7};
  const BroadcastPlan plan = MakeBroadcastPlan({a, b, c}, out);
  const int64_t numel = NumElements(out);
  for (int64_t begin = 0; begin <= numel; begin += 5) {
    for (int64_t end = begin; end <= numel; end += 11) {
      std::vector<int> seen(numel, 0);
      int64_t next = begin;
      ForEachBroadcastRunIn(plan, begin, end, [&](const int64_t* off, int64_t o, int64_t n) {
        ASSERT_EQ(o, next);
        ASSERT_GT(n, 0);
        for (int64_t i = 0; i < n; ++i) {
          ++seen[o + i];
          ASSERT_EQ(off[0] + i * plan.inner_stride(0), BroadcastSourceIndex(a, out, o + i));
          ASSERT_EQ(off[1] + i * plan.inner_stride(1), BroadcastSourceIndex(b, out, o + i));
          ASSERT_EQ(off[2] + i * plan.inner_stride(2), BroadcastSourceIndex(c, out, o + i));
        }
        next = o + n;
      });
      EXPECT_EQ(next, begin < end ? end : begin);
      for (int64_t i = 0; i < numel; ++i) ASSERT_EQ(seen[i], i >= begin && i < end ? 1 : 0);
    }
  }
}

TEST(ParallelKernelsTest, BatchNormIsBitIdenticalAcrossThreadCountsAndInPlace) {
  const int64_t n = 32, c = 16, size = 32 * 32;
  const std::vector<float> x = UniformFloats(n * c * size, -3.0f, 3.0f, 9);
  const std::vector<float> scale = UniformFloats(c, 0.5f, 1.5f, 10);
  const std::vector<float> bias = UniformFloats(c, -1.0f, 1.0f, 11);
  const std::vector<float> mean = UniformFloats(c, -0.5f, 0.5f, 12);
  const std::vector<float> var = UniformFloats(c, 0.1f, 2.0f, 13);
  std::vector<float> ref(x.size());
  BatchNormF32Inference(n, c, size, x.data(), scale.data(), bias.data(), mean.data(), var.data(),
                        1e-5f, ref.data(), 1);
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); i += 997) {
    const int64_t ch = i / size % c;
    const float a = scale[ch] / std::sqrt(var[ch] + 1e-5f);
    EXPECT_NEAR(ref[i], (x[i] - mean[ch]) * a + bias[ch], 1e-5f) << i;
  }
  for (int threads : kThreadCounts) {
    std::vector<float> y(x.size(), std::nanf(""));
    BatchNormF32Inference(n, c, size, x.data(), scale.data(), bias.data(), mean.data(), var.data(),
                          1e-5f, y.data(), threads);
    EXPECT_TRUE(SameBits(y, ref)) << threads << " threads";
    std::vector<float> in_place = x;
    BatchNormF32Inference(n, c, size, in_place.data(), scale.data(), bias.data(), mean.data(),
                          var.data(), 1e-5f, in_place.data(), threads);
    EXPECT_TRUE(SameBits(in_place, ref)) << "in place, " << threads << " threads";
  }
}

/// out[i, j, k] = in[i, j0 + j, k0 + k * step] for in [d0, d1, d2], written out directly.
std::vector<float> SliceReference(const std::vector<float>& in, const Dims& d, int64_t j0,
                                  int64_t nj, int64_t k0, int64_t nk, int64_t step) {
  std::vector<float> out;
  for (int64_t i = 0; i < d[0]; ++i) {
    for (int64_t j = 0; j < nj; ++j) {
      for (int64_t k = 0; k < nk; ++k)
        out.push_back(in[(i * d[1] + j0 + j) * d[2] + k0 + k * step]);
    }
  }
  return out;
}

TEST(ParallelKernelsTest, IndexedCopySlicesPadsAndTransposesAtEveryThreadCount) {
  const Dims d{128, 40, 96};
  const std::vector<float> in = UniformFloats(NumElements(d), -1.0f, 1.0f, 14);
  // Strided slices along the last axis (forward, backward) and a contiguous one.
  struct SliceCase {
    int64_t j0, nj, k0, nk, step;
  };
  for (const SliceCase& s :
       {SliceCase{3, 30, 1, 47, 2}, SliceCase{0, 40, 95, 32, -3}, SliceCase{5, 20, 10, 80, 1}}) {
    std::vector<CopyAxis> axes = {IdentityAxis(d[0], d[1] * d[2]), CopyAxis{}, CopyAxis{}};
    axes[1].in_stride = d[2];
    for (int64_t j = 0; j < s.nj; ++j) axes[1].source.push_back(s.j0 + j);
    axes[2].in_stride = 1;
    for (int64_t k = 0; k < s.nk; ++k) axes[2].source.push_back(s.k0 + k * s.step);
    const std::vector<float> ref = SliceReference(in, d, s.j0, s.nj, s.k0, s.nk, s.step);
    for (int threads : {1, 2, 3, 4}) {
      std::vector<float> out(ref.size(), std::nanf(""));
      IndexedCopy(axes, sizeof(float), in.data(), nullptr, out.data(), threads);
      EXPECT_TRUE(SameBits(out, ref)) << "step " << s.step << ", " << threads << " threads";
    }
  }
  // Channel padding with a fill value, as ResNet's shortcut does: 8 fill rows on either side.
  const float fill = 2.5f;
  std::vector<CopyAxis> pad = {IdentityAxis(d[0], d[1] * d[2]), CopyAxis{}, IdentityAxis(d[2], 1)};
  pad[1].in_stride = d[2];
  for (int64_t j = -8; j < d[1] + 8; ++j) pad[1].source.push_back(j >= 0 && j < d[1] ? j : -1);
  std::vector<float> padded_ref;
  for (int64_t i = 0; i < d[0]; ++i) {
    for (int64_t j = -8; j < d[1] + 8; ++j) {
      for (int64_t k = 0; k < d[2]; ++k) {
        padded_ref.push_back(j >= 0 && j < d[1] ? in[(i * d[1] + j) * d[2] + k] : fill);
      }
    }
  }
  for (int threads : {1, 2, 3}) {
    std::vector<float> out(padded_ref.size(), std::nanf(""));
    IndexedCopy(pad, sizeof(float), in.data(), &fill, out.data(), threads);
    EXPECT_TRUE(SameBits(out, padded_ref)) << threads << " threads";
  }
  // Transpose [128, 40, 96] -> [96, 128, 40]: the innermost output axis is strided in the input.
  std::vector<float> transposed_ref(in.size());
  for (int64_t i = 0; i < d[0]; ++i) {
    for (int64_t j = 0; j < d[1]; ++j) {
      for (int64_t k = 0; k < d[2]; ++k) {
        transposed_ref[(k * d[0] + i) * d[1] + j] = in[(i * d[1] + j) * d[2] + k];
      }
    }
  }
  for (int threads : {1, 2, 4}) {
    std::vector<float> out(in.size(), std::nanf(""));
    TransposeBytes(d, std::vector<int64_t>{2, 0, 1}, sizeof(float), in.data(), out.data(), threads);
    EXPECT_TRUE(SameBits(out, transposed_ref)) << threads << " threads";
  }
}

TEST(ParallelKernelsTest, IndexedCopyRepeatsRowsAndColumnsForANearest2xResize) {
  // A nearest 2x Resize of [C, H, W] (ppocr-det-v3's upsampling): every column and every row of
  // the input twice, with odd output widths and heights (the last one once), for elements of 1
  // to 8 bytes and 3 (the byte-by-byte route), at 1 to 3 threads.
  for (const size_t elem : {1, 2, 3, 4, 8}) {
    for (const Dims& out_dims : {Dims{5, 34, 70}, Dims{3, 9, 37}, Dims{2, 1, 1}}) {
      const Dims in_dims{out_dims[0], (out_dims[1] + 1) / 2, (out_dims[2] + 1) / 2};
      std::vector<uint8_t> in(NumElements(in_dims) * elem);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 37 + i / 7);
      std::vector<CopyAxis> axes = {IdentityAxis(in_dims[0], in_dims[1] * in_dims[2]), CopyAxis{},
                                    CopyAxis{}};
      axes[1].in_stride = in_dims[2];
      for (int64_t y = 0; y < out_dims[1]; ++y) axes[1].source.push_back(y / 2);
      axes[2].in_stride = 1;
      for (int64_t x = 0; x < out_dims[2]; ++x) axes[2].source.push_back(x / 2);
      std::vector<uint8_t> ref;
      for (int64_t c = 0; c < out_dims[0]; ++c) {
        for (int64_t y = 0; y < out_dims[1]; ++y) {
          for (int64_t x = 0; x < out_dims[2]; ++x) {
            const size_t at = ((c * in_dims[1] + y / 2) * in_dims[2] + x / 2) * elem;
            ref.insert(ref.end(), in.begin() + at, in.begin() + at + elem);
          }
        }
      }
      for (int threads : {1, 2, 3}) {
        std::vector<uint8_t> out(ref.size(), 0xa5);
        IndexedCopy(axes, elem, in.data(), nullptr, out.data(), threads);
        EXPECT_TRUE(SameBits(out, ref)) << elem << "-byte elements, out " << out_dims[1] << "x"
                                        << out_dims[2] << ", " << threads << " threads";
      }
    }
  }
}

/// IndexedCopy's contract, one output element at a time: out[o] = in[sum_k source_k[o_k] *
/// in_stride_k], or `fill` where any source is negative.
template <typename T>
std::vector<T> IndexedCopyReference(const std::vector<CopyAxis>& axes, const std::vector<T>& in,
                                    T fill) {
  int64_t total = 1;
  for (const CopyAxis& a : axes) total *= static_cast<int64_t>(a.source.size());
  std::vector<T> out(total);
  for (int64_t o = 0; o < total; ++o) {
    int64_t rest = o, at = 0;
    bool filled = false;
    for (size_t k = axes.size(); k-- > 0;) {
      const int64_t n = static_cast<int64_t>(axes[k].source.size());
      const int64_t s = axes[k].source[rest % n];
      rest /= n;
      filled = filled || s < 0;
      at += s * axes[k].in_stride;
    }
    out[o] = filled ? fill : in[at];
  }
  return out;
}

// Trailing axes that copy whole contiguous blocks merge into one row: a channel pad of NCHW
// data (H and W merge), a transpose that keeps the last two axes, and a window of W (the H axis
// must not merge: its stride is the input's row, not the window's).
TEST(ParallelKernelsTest, IndexedCopyMergesTrailingWholeBlocks) {
  const Dims d{4, 6, 5, 9};
  const std::vector<float> in = UniformFloats(NumElements(d), -1.0f, 1.0f, 15);
  const Dims strides{6 * 5 * 9, 5 * 9, 9, 1};
  const float fill = -3.5f;
  std::vector<std::vector<CopyAxis>> cases;
  // Channel pad, 2 before and 3 after.
  cases.push_back({IdentityAxis(4, strides[0]), CopyAxis{strides[1], {}}, IdentityAxis(5, 9),
                   IdentityAxis(9, 1)});
  for (int64_t c = -2; c < 6 + 3; ++c) cases.back()[1].source.push_back(c >= 0 && c < 6 ? c : -1);
  // Transpose [4, 6, 5, 9] -> [6, 4, 5, 9].
  cases.push_back({IdentityAxis(6, strides[1]), IdentityAxis(4, strides[0]), IdentityAxis(5, 9),
                   IdentityAxis(9, 1)});
  // Columns 0..6 of every row: the last axis is an identity run, the H axis is not contiguous
  // with it.
  cases.push_back({IdentityAxis(4, strides[0]), IdentityAxis(6, strides[1]), IdentityAxis(5, 9),
                   IdentityAxis(7, 1)});
  // Rows 1..3 whole: H is no identity axis, W merges with nothing.
  cases.push_back({IdentityAxis(4, strides[0]), IdentityAxis(6, strides[1]), CopyAxis{9, {1, 2, 3}},
                   IdentityAxis(9, 1)});
  // Every other column of every row: one strided run through the whole input.
  cases.push_back({IdentityAxis(4, strides[0]), IdentityAxis(6, strides[1]), IdentityAxis(5, 9),
                   CopyAxis{1, {0, 2, 4, 6, 8}}});
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<float> ref = IndexedCopyReference(cases[i], in, fill);
    for (int threads : {1, 2, 3}) {
      std::vector<float> out(ref.size(), std::nanf(""));
      IndexedCopy(cases[i], sizeof(float), in.data(), &fill, out.data(), threads);
      EXPECT_TRUE(SameBits(out, ref)) << "case " << i << ", " << threads << " threads";
    }
  }
}

// Byte runs through a whole tensor (ResNet's x[:, :, :, ::2] shortcut on int8 data): even and
// odd columns at stride 2 (the vector path, which must not read past the run's last byte), and
// stride 3; long enough for several parallel pieces.
TEST(ParallelKernelsTest, IndexedCopyByteRunsAtStrides2And3) {
  const int64_t rows = 3000, width = 48;
  std::vector<uint8_t> in(rows * width);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + i / 251);
  for (const int64_t step : {2, 3}) {
    for (const int64_t first : {0, 1}) {
      CopyAxis cols{1, {}};
      for (int64_t c = first; c < width; c += step) cols.source.push_back(c);
      // Only an even run through every row merges: width == count * step.
      const std::vector<CopyAxis> axes = {IdentityAxis(rows, width), cols};
      const std::vector<uint8_t> ref = IndexedCopyReference<uint8_t>(axes, in, 0);
      for (int threads : {1, 2}) {
        std::vector<uint8_t> out(ref.size(), 0xEE);
        IndexedCopy(axes, 1, in.data(), nullptr, out.data(), threads);
        EXPECT_EQ(out, ref) << "step " << step << ", first " << first << ", " << threads
                            << " threads";
      }
    }
  }
}

// Short byte rows at stride 2 that do not merge (x[:, :, ::2, ::2], the CIFAR ResNet's
// downsampling shortcut on int8 16 x 16 maps): rows of 15 to 33 elements, every other row, the
// last element of the last row the input's last byte (the vector path reads no byte past it,
// which the sanitized build checks).
TEST(ParallelKernelsTest, IndexedCopyShortByteRowsAtStride2) {
  for (const int64_t n : {15, 16, 17, 31, 32, 33}) {
    const int64_t width = 2 * n - 1, rows = 7;
    std::vector<uint8_t> in(rows * width);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 13 + i / 7);
    CopyAxis every_other_row{width, {}};
    for (int64_t r = 0; r < rows; r += 2) every_other_row.source.push_back(r);
    CopyAxis cols{1, {}};
    for (int64_t c = 0; c < width; c += 2) cols.source.push_back(c);
    const std::vector<CopyAxis> axes = {every_other_row, cols};
    const std::vector<uint8_t> ref = IndexedCopyReference<uint8_t>(axes, in, 0);
    for (int threads : {1, 2}) {
      std::vector<uint8_t> out(ref.size(), 0xEE);
      IndexedCopy(axes, 1, in.data(), nullptr, out.data(), threads);
      EXPECT_EQ(out, ref) << n << " elements a row, " << threads << " threads";
    }
  }
}

// The ResNet shortcut's whole copy in one IndexedCopy (x[:, :, ::2, ::2] and a channel pad) for
// every element size the rows have their own copies for (1, 2, 4, 8) and one they do not (3):
// rows of 1 to 17 elements at stride 2 (the 4-byte and the short-byte vector steps and their
// tails), fill rows in the middle axis, a fill of equal bytes (memset) and one of different
// bytes, and the input's last element in the last row (no vector step reads past it, which the
// sanitized build checks). Compared with the contract one element at a time.
TEST(ParallelKernelsTest, IndexedCopyStrideTwoRowsWithFillAtEveryElementSize) {
  for (const size_t es : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{8}}) {
    for (const int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17}) {
      const int64_t batch = 2, c = 3, h = 2 * 3 - 1, w = 2 * n - 1;
      std::vector<uint8_t> in(batch * c * h * w * es);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 29 + i / 5);
      std::vector<CopyAxis> axes = {IdentityAxis(batch, c * h * w), CopyAxis{h * w, {}},
                                    CopyAxis{w, {0, 2, 4}}, CopyAxis{1, {}}};
      for (int64_t k = -2; k < c + 1; ++k) axes[1].source.push_back(k >= 0 && k < c ? k : -1);
      for (int64_t x = 0; x < w; x += 2) axes[3].source.push_back(x);
      for (const uint8_t fill_step : {0, 1}) {
        std::vector<uint8_t> fill(es);
        for (size_t b = 0; b < es; ++b) fill[b] = static_cast<uint8_t>(0xA5 + fill_step * b);
        // The contract, element by element.
        std::vector<uint8_t> ref;
        for (int64_t i = 0; i < batch; ++i) {
          for (const int64_t k : axes[1].source) {
            for (const int64_t y : axes[2].source) {
              for (const int64_t x : axes[3].source) {
                const uint8_t* e = k < 0 ? fill.data() : &in[(((i * c + k) * h + y) * w + x) * es];
                ref.insert(ref.end(), e, e + es);
              }
            }
          }
        }
        for (int threads : {1, 2, 3}) {
          std::vector<uint8_t> out(ref.size(), 0xEE);
          IndexedCopy(axes, es, in.data(), fill.data(), out.data(), threads);
          EXPECT_EQ(out, ref) << es << "-byte elements, rows of " << n << ", fill step "
                              << int{fill_step} << ", " << threads << " threads";
        }
      }
    }
  }
}

}  // namespace
}  // namespace qcc::cpu
