// The data-movement kernel bodies (kernels/cuda/movement_bodies.h), run by the host loop
// ForEachIndex, against the backend_cpu kernels the CPU runtime calls for the same steps
// (runtime/step_exec_movement.cc, step_exec_float.cc's Concat, step_exec_int8.cc's QConcat),
// bit for bit (memcmp), over random shapes, ranks 0-6, element sizes 1, 2, 4 (and 8).
#include "kernels/cuda/movement_bodies.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/pad.h"
#include "kernels/cpu/qelementwise.h"
#include "kernels/cuda/launch.h"
#include "support/float16.h"
#include "support/tensor.h"

namespace qcc::cuda {
namespace {

std::vector<uint8_t> RandomBytes(int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> x(n);
  for (auto& v : x) v = static_cast<uint8_t>(rng());
  return x;
}

Dims RandomDims(std::mt19937& rng, int rank, int max_extent) {
  std::uniform_int_distribution<int> e(1, max_extent);
  Dims d(rank);
  for (auto& v : d) v = e(rng);
  return d;
}

int64_t ProductOf(const Dims& d, int begin, int end) {
  int64_t p = 1;
  for (int k = begin; k < end; ++k) p *= d[k];
  return p;
}

bool Same(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

constexpr int32_t kElemSizes[] = {1, 2, 4, 8};

TEST(MovementBodies, TransposeMatchesCpu) {
  std::mt19937 rng(31);
  int cases = 0;
  for (int rank = 0; rank <= kMaxBodyRank; ++rank) {
    for (int32_t es : kElemSizes) {
      for (int rep = 0; rep < 6; ++rep) {
        const Dims x = RandomDims(rng, rank, rank >= 5 ? 4 : 7);
        std::vector<int64_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        const int64_t n = NumElements(x);
        const std::vector<uint8_t> in = RandomBytes(n * es, rng);
        std::vector<uint8_t> want(n * es), got(n * es);
        cpu::TransposeBytes(x, perm, es, in.data(), want.data(), 1);
        StridedCopyArgs a{};
        ASSERT_TRUE(MakeTransposeArgs(x.data(), rank, perm.data(), es, in.data(), got.data(), &a));
        ForEachIndex<TransposeBody>(n, a);
        ASSERT_TRUE(Same(got, want)) << "rank " << rank << " elem " << es << " rep " << rep;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 7 * 4 * 6);
}

TEST(MovementBodies, MakeTransposeArgsRejectsBadPerms) {
  const int64_t dims[] = {2, 3, 4};
  StridedCopyArgs a{};
  const int64_t repeated[] = {0, 0, 1}, out_of_range[] = {0, 3, 1};
  EXPECT_FALSE(MakeTransposeArgs(dims, 3, repeated, 4, nullptr, nullptr, &a));
  EXPECT_FALSE(MakeTransposeArgs(dims, 3, out_of_range, 4, nullptr, nullptr, &a));
  EXPECT_FALSE(MakeTransposeArgs(dims, 7, repeated, 4, nullptr, nullptr, &a));
}

TEST(MovementBodies, SliceMatchesCpu) {
  std::mt19937 rng(32);
  int cases = 0;
  for (int rank = 1; rank <= kMaxBodyRank; ++rank) {
    for (int32_t es : kElemSizes) {
      for (int rep = 0; rep < 8; ++rep) {
        const Dims x = RandomDims(rng, rank, rank >= 5 ? 5 : 9);
        Dims y(rank);
        std::vector<int64_t> starts(rank), steps(rank);
        for (int k = 0; k < rank; ++k) {
          // A valid slice: start in range, step +-1..3, as many elements as fit (at least 1).
          std::uniform_int_distribution<int64_t> st(0, x[k] - 1);
          std::uniform_int_distribution<int> sp(1, 3), sign(0, 1);
          starts[k] = st(rng);
          steps[k] = sp(rng) * (sign(rng) ? -1 : 1);
          const int64_t room =
              steps[k] > 0 ? (x[k] - 1 - starts[k]) / steps[k] : starts[k] / -steps[k];
          std::uniform_int_distribution<int64_t> cnt(1, room + 1);
          y[k] = cnt(rng);
        }
        const int64_t n = NumElements(y);
        const std::vector<uint8_t> in = RandomBytes(NumElements(x) * es, rng);
        std::vector<uint8_t> want(n * es), got(n * es);
        // runtime's RunSlice.
        const Dims strides = RowMajorStrides(x);
        std::vector<cpu::CopyAxis> axes(rank);
        for (int a = 0; a < rank; ++a) {
          axes[a].in_stride = strides[a];
          axes[a].source.resize(y[a]);
          for (int64_t i = 0; i < y[a]; ++i) axes[a].source[i] = starts[a] + i * steps[a];
        }
        cpu::IndexedCopy(axes, es, in.data(), nullptr, want.data(), 1);
        StridedCopyArgs a{};
        ASSERT_TRUE(MakeSliceArgs(x.data(), y.data(), rank, starts.data(), steps.data(), es,
                                  in.data(), got.data(), &a));
        ForEachIndex<SliceBody>(n, a);
        ASSERT_TRUE(Same(got, want)) << "rank " << rank << " elem " << es << " rep " << rep;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 6 * 4 * 8);
}

TEST(MovementBodies, PadMatchesCpu) {
  std::mt19937 rng(33);
  std::uniform_int_distribution<int> pad(0, 3), coin(0, 3);
  std::uniform_real_distribution<float> value(-10.0f, 10.0f);
  std::uniform_int_distribution<int> ival(-128, 127);
  int cases = 0;
  for (int rank = 0; rank <= kMaxBodyRank; ++rank) {
    for (int32_t es : kElemSizes) {
      for (int rep = 0; rep < 6; ++rep) {
        const Dims x = RandomDims(rng, rank, rank >= 5 ? 3 : 6);
        std::vector<int64_t> pads(2 * rank);
        for (auto& p : pads) p = coin(rng) == 0 ? 0 : pad(rng);
        Dims y = x;
        for (int k = 0; k < rank; ++k) y[k] += pads[k] + pads[k + rank];
        const float fv = value(rng);
        const int64_t iv = ival(rng);
        // runtime's PadFill for f32 (4), f16 (2), int8 (1), int64 (8).
        std::vector<uint8_t> fill(es);
        if (es == 4) std::memcpy(fill.data(), &fv, 4);
        if (es == 2) {
          const uint16_t h = FloatToHalf(fv);
          std::memcpy(fill.data(), &h, 2);
        }
        if (es == 1) fill[0] = static_cast<uint8_t>(static_cast<int8_t>(iv));
        if (es == 8) std::memcpy(fill.data(), &iv, 8);
        const int64_t n = NumElements(y);
        const std::vector<uint8_t> in = RandomBytes(NumElements(x) * es, rng);
        std::vector<uint8_t> want(n * es), got(n * es);
        // runtime's RunPad.
        const Dims strides = RowMajorStrides(x);
        std::vector<cpu::CopyAxis> axes(rank);
        for (int a = 0; a < rank; ++a) {
          axes[a].in_stride = strides[a];
          axes[a].source =
              cpu::PadSourceIndex(x[a], pads[a], pads[a + rank], cpu::PadFill::kConstant);
        }
        cpu::IndexedCopy(axes, es, in.data(), fill.data(), want.data(), 1);
        PadArgs a{};
        a.x = in.data();
        a.y = got.data();
        a.elem_size = es;
        a.rank = rank;
        a.fill_bits = PadFillBits(es, fv, iv);
        for (int k = 0; k < rank; ++k) {
          a.in_dims[k] = x[k];
          a.out_dims[k] = y[k];
          a.pad_begin[k] = pads[k];
        }
        ForEachIndex<PadBody>(n, a);
        ASSERT_TRUE(Same(got, want)) << "rank " << rank << " elem " << es << " rep " << rep;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 7 * 4 * 6);
}

// Dims of the inputs of a concat along `axis`: equal except on the axis.
std::vector<Dims> ConcatInputs(std::mt19937& rng, int rank, int axis, int count) {
  const Dims base = RandomDims(rng, rank, 5);
  std::uniform_int_distribution<int> e(0, 4);  // zero-extent inputs too
  std::vector<Dims> dims(count, base);
  for (auto& d : dims) d[axis] = e(rng);
  return dims;
}

TEST(MovementBodies, ConcatMatchesCpu) {
  std::mt19937 rng(34);
  int cases = 0;
  for (int rank = 1; rank <= 5; ++rank) {
    for (int axis = 0; axis < rank; ++axis) {
      for (int32_t es : kElemSizes) {
        const int count = 1 + cases % 4;
        const std::vector<Dims> dims = ConcatInputs(rng, rank, axis, count);
        Dims y = dims[0];
        y[axis] = 0;
        for (const Dims& d : dims) y[axis] += d[axis];
        const int64_t outer = ProductOf(y, 0, axis), out_row = ProductOf(y, axis, rank);
        std::vector<std::vector<uint8_t>> ins;
        std::vector<const void*> ptrs;
        std::vector<int64_t> chunk_bytes;
        for (const Dims& d : dims) {
          ins.push_back(RandomBytes(NumElements(d) * es, rng));
          chunk_bytes.push_back(ProductOf(d, axis, rank) * es);
        }
        for (const auto& in : ins) ptrs.push_back(in.data());
        std::vector<uint8_t> want(NumElements(y) * es), got(NumElements(y) * es);
        cpu::ConcatBytes(outer, chunk_bytes, ptrs, want.data());
        int64_t offset = 0;
        for (size_t i = 0; i < dims.size(); ++i) {
          const int64_t chunk = ProductOf(dims[i], axis, rank);
          ForEachIndex<ConcatBody>(
              outer * chunk, ConcatArgs{ins[i].data(), got.data(), es, chunk, out_row, offset});
          offset += chunk;
        }
        ASSERT_TRUE(Same(got, want)) << "rank " << rank << " axis " << axis << " elem " << es;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 15 * 4);
}

TEST(MovementBodies, QConcatMatchesRuntimeRule) {
  std::mt19937 rng(35);
  std::uniform_int_distribution<int> zp(-128, 127), coin(0, 2);
  std::uniform_real_distribution<float> mult(0.1f, 3.0f);
  int cases = 0;
  for (int rank = 1; rank <= 4; ++rank) {
    for (int axis = 0; axis < rank; ++axis) {
      for (int rep = 0; rep < 5; ++rep) {
        const int count = 2 + rep % 3;
        const std::vector<Dims> dims = ConcatInputs(rng, rank, axis, count);
        Dims y = dims[0];
        y[axis] = 0;
        for (const Dims& d : dims) y[axis] += d[axis];
        const int64_t outer = ProductOf(y, 0, axis), row = ProductOf(y, axis, rank);
        const int32_t zp_out = zp(rng);
        std::vector<float> mults(count);
        std::vector<int32_t> zps(count);
        for (int i = 0; i < count; ++i) {
          const int k = coin(rng);  // a copy, a multiplier-1 rescale, or a real rescale
          mults[i] = k == 2 ? mult(rng) : 1.0f;
          zps[i] = k == 0 ? zp_out : zp(rng);
        }
        std::vector<std::vector<uint8_t>> ins;
        std::vector<int64_t> chunk(count);
        for (int i = 0; i < count; ++i) {
          ins.push_back(RandomBytes(NumElements(dims[i]), rng));
          chunk[i] = ProductOf(dims[i], axis, rank);
        }
        // runtime's RunQConcat.
        std::vector<int8_t> want(NumElements(y)), got(NumElements(y));
        for (int64_t o = 0; o < outer; ++o) {
          int8_t* dst = want.data() + o * row;
          for (int i = 0; i < count; ++i) {
            const int8_t* src = reinterpret_cast<const int8_t*>(ins[i].data()) + o * chunk[i];
            if (mults[i] == 1.0f && zps[i] == zp_out) {
              std::memcpy(dst, src, chunk[i]);
            } else {
              cpu::RequantizeS8({zps[i], mults[i], zp_out, -128, 127}, chunk[i], src, dst, 1);
            }
            dst += chunk[i];
          }
        }
        int64_t offset = 0;
        for (int i = 0; i < count; ++i) {
          QConcatArgs a{reinterpret_cast<const int8_t*>(ins[i].data()),
                        got.data(),
                        chunk[i],
                        row,
                        offset,
                        zps[i],
                        mults[i],
                        zp_out};
          ForEachIndex<QConcatBody>(outer * chunk[i], a);
          offset += chunk[i];
        }
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size()))
            << "rank " << rank << " axis " << axis << " rep " << rep;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 10 * 5);
}

TEST(MovementBodies, LayoutChangesMatchTranspose) {
  std::mt19937 rng(36);
  int cases = 0;
  for (int32_t es : {1, 2, 4}) {
    for (int rep = 0; rep < 10; ++rep) {
      const Dims nchw = RandomDims(rng, 4, 9);
      const Dims nhwc = {nchw[0], nchw[2], nchw[3], nchw[1]};
      const int64_t n = NumElements(nchw);
      const std::vector<uint8_t> in = RandomBytes(n * es, rng);
      LayoutArgs a{in.data(), nullptr, es, nchw[0], nchw[1], nchw[2], nchw[3]};
      // NCHW -> NHWC is Transpose perm [0, 2, 3, 1].
      std::vector<uint8_t> want(n * es), got(n * es);
      const std::vector<int64_t> to_nhwc = {0, 2, 3, 1}, to_nchw = {0, 3, 1, 2};
      cpu::TransposeBytes(nchw, to_nhwc, es, in.data(), want.data(), 1);
      a.y = got.data();
      ForEachIndex<NchwToNhwcBody>(n, a);
      ASSERT_TRUE(Same(got, want)) << "to NHWC, elem " << es << " rep " << rep;
      // NHWC -> NCHW (perm [0, 3, 1, 2]) of that result gives the input back.
      std::vector<uint8_t> want2(n * es), back(n * es);
      cpu::TransposeBytes(nhwc, to_nchw, es, got.data(), want2.data(), 1);
      a.x = got.data();
      a.y = back.data();
      ForEachIndex<NhwcToNchwBody>(n, a);
      ASSERT_TRUE(Same(back, want2)) << "to NCHW, elem " << es << " rep " << rep;
      ASSERT_TRUE(Same(back, in));
      ++cases;
    }
  }
  EXPECT_EQ(cases, 30);
}

}  // namespace
}  // namespace qcc::cuda
