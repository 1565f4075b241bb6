// Attention with both products in int8 (kernels/cpu/attention.h): the VNNI and AVX2
// paths bit-identical to the plain one over shapes (head and length tails, several row blocks,
// grouped heads, every mask layout) and threads; close to the fp32 kernel; probabilities that
// sum to exactly 1; non-finite inputs computed in fp32; fully masked rows NaN as in fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_features.h"

namespace qcc::cpu {
namespace {

struct Case {
  int64_t batch, q_len, kv_len, q_heads, kv_heads, head, v_head;
  std::vector<int64_t> mask_dims;  // empty: no mask
};

struct Data {
  std::vector<float> q, k, v, mask;
};

Data MakeData(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  Data d;
  d.q.resize(c.batch * c.q_len * c.q_heads * c.head);
  d.k.resize(c.batch * c.kv_len * c.kv_heads * c.head);
  d.v.resize(c.batch * c.kv_len * c.kv_heads * c.v_head);
  for (auto* t : {&d.q, &d.k, &d.v}) {
    for (float& x : *t) x = normal(rng);
  }
  int64_t mask_size = c.mask_dims.empty() ? 0 : 1;
  for (int64_t e : c.mask_dims) mask_size *= e;
  d.mask.resize(mask_size);
  for (int64_t i = 0; i < mask_size; ++i) {
    // HF's padding mask (the most negative float) on every third position, small biases elsewhere.
    d.mask[i] =
        i % 3 == 1 ? std::numeric_limits<float>::lowest() : 0.1f * static_cast<float>(i % 5);
  }
  return d;
}

AttentionF32Params ParamsOf(const Case& c, int threads) {
  return Attention3dParams(c.batch, c.q_len, c.kv_len, c.q_heads * c.head, c.kv_heads * c.v_head,
                           c.q_heads, c.kv_heads, c.mask_dims, 0.3f, threads);
}

enum class Path { kFast, kAvx2, kPlain, kF32 };

std::vector<float> RunAttention(const Case& c, const Data& d, int threads, Path path) {
  const AttentionF32Params p = ParamsOf(c, threads);
  std::vector<float> y(c.batch * c.q_len * c.q_heads * c.v_head, -7.0f);
  const float* mask = c.mask_dims.empty() ? nullptr : d.mask.data();
  if (path == Path::kF32) {
    std::vector<float> scratch(AttentionF32ScratchFloats(p));
    AttentionF32(p, d.q.data(), d.k.data(), d.v.data(), mask, y.data(), scratch.data());
    return y;
  }
  // 64-byte aligned scratch followed by guard bytes that must stay untouched.
  constexpr int64_t kGuard = 64;
  const int64_t bytes = AttentionInt8ScratchBytes(p);
  std::vector<char> scratch(bytes + 64 + kGuard, 0x5a);
  char* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  const QKernelPath kernels = path == Path::kFast   ? QKernelPath::kFastest
                              : path == Path::kAvx2 ? QKernelPath::kAvx2
                                                    : QKernelPath::kReference;
  AttentionInt8(p, d.q.data(), d.k.data(), d.v.data(), mask, y.data(), aligned, kernels);
  for (int64_t i = 0; i < kGuard; ++i) EXPECT_EQ(aligned[bytes + i], 0x5a) << "overrun at +" << i;
  return y;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {2, 5, 7, 4, 2, 3, 5, {2, 1, 1, 7}},          // tails everywhere, grouped heads
      {1, 130, 300, 2, 2, 20, 36, {130, 1}},        // 3 row blocks; a mask constant along rows
      {3, 17, 33, 3, 1, 64, 16, {3, 3, 17, 33}},    // multi-query, a full mask
      {2, 128, 128, 4, 4, 32, 32, {2, 1, 1, 128}},  // BERT-base-like heads
      {1, 1, 1, 1, 1, 1, 1, {}},                    // the smallest, no mask
      {2, 9, 16, 2, 2, 16, 48, {16}},               // a mask of one row for everything
  };
  return cases;
}

TEST(AttentionInt8Test, VnniAndAvx2EqualPlainAndThreadsDoNotChangeBits) {
  for (size_t i = 0; i < Cases().size(); ++i) {
    const Case& c = Cases()[i];
    SCOPED_TRACE(absl::StrCat("case ", i));
    const Data d = MakeData(c, 100 + i);
    const std::vector<float> plain = RunAttention(c, d, 1, Path::kPlain);
    EXPECT_TRUE(SameBits(RunAttention(c, d, 2, Path::kPlain), plain));
    for (Path path : {Path::kFast, Path::kAvx2}) {
      EXPECT_TRUE(SameBits(RunAttention(c, d, 1, path), plain));
      EXPECT_TRUE(SameBits(RunAttention(c, d, 2, path), plain));
    }
  }
  if (!Cpu().avx512_vnni() || !Cpu().avx2) {
    GTEST_SKIP() << "this CPU lacks AVX-512 VNNI or AVX2: those paths ran the plain code";
  }
}

TEST(AttentionInt8Test, CloseToFp32) {
  // Per-row and per-column int8 with u8 probabilities, on scores of standard deviation 2 to 4
  // (peaked softmax rows, where a logit error moves the most weight): the outputs as a whole at
  // cosine >= 0.9995 and the worst element within 8% of the largest magnitude (measured here:
  // cosine 0.99980 to 1 and worst 0 to 4.9%).
  for (size_t i = 0; i < Cases().size(); ++i) {
    const Case& c = Cases()[i];
    SCOPED_TRACE(absl::StrCat("case ", i));
    const Data d = MakeData(c, 200 + i);
    const std::vector<float> want = RunAttention(c, d, 1, Path::kF32);
    const std::vector<float> got = RunAttention(c, d, 1, Path::kFast);
    double dot = 0, ww = 0, gg = 0, largest = 0, worst = 0;
    for (size_t e = 0; e < want.size(); ++e) {
      ASSERT_TRUE(std::isfinite(got[e])) << e;
      dot += double{want[e]} * got[e];
      ww += double{want[e]} * want[e];
      gg += double{got[e]} * got[e];
      largest = std::max(largest, std::fabs(double{want[e]}));
      worst = std::max(worst, std::fabs(double{want[e]} - got[e]));
    }
    EXPECT_GE(dot / std::sqrt(ww * gg), 0.9995);
    EXPECT_LE(worst, 0.08 * largest);
  }
}

TEST(AttentionInt8Test, ProbabilitiesSumToOne) {
  // A V column that is one constant everywhere comes out as that constant (to float rounding):
  // Y = sum_j p8[j] v8 / sum_j p8[j] * sv with v8 = 127 and sv = c / 127, whatever the scores.
  // The correction terms for the signed and padded operands must cancel exactly for this.
  for (size_t i = 0; i < Cases().size(); ++i) {
    const Case& c = Cases()[i];
    SCOPED_TRACE(absl::StrCat("case ", i));
    Data d = MakeData(c, 300 + i);
    const float constant = -2.75f;
    for (int64_t row = 0; row < c.batch * c.kv_len * c.kv_heads; ++row) {
      d.v[row * c.v_head] = constant;  // column 0 of every K/V head
    }
    const std::vector<float> y = RunAttention(c, d, 1, Path::kFast);
    for (int64_t row = 0; row < c.batch * c.q_len * c.q_heads; ++row) {
      ASSERT_NEAR(y[row * c.v_head], constant, 4 * std::fabs(constant) * 1.2e-7) << row;
    }
  }
}

TEST(AttentionInt8Test, NonFiniteInputsRunInFp32) {
  // A NaN in one query row and an infinity in one value: the (batch, head) units they are in
  // give the fp32 kernel's bits (NaN where fp32 has NaN); the others the int8 path's.
  const Case c = {2, 6, 8, 2, 2, 4, 4, {2, 1, 1, 8}};
  const Data clean = MakeData(c, 400);
  Data bad = clean;
  const int64_t q_row = c.q_heads * c.head, v_row = c.kv_heads * c.v_head;
  bad.q[(0 * c.q_len + 3) * q_row + 1 * c.head + 2] = std::nanf("");  // batch 0, head 1
  bad.v[(1 * c.kv_len + 5) * v_row + 0 * c.v_head + 1] =
      std::numeric_limits<float>::infinity();  // batch 1, head 0
  const std::vector<float> int8 = RunAttention(c, clean, 1, Path::kFast);
  const std::vector<float> f32 = RunAttention(c, bad, 1, Path::kF32);
  for (Path path : {Path::kFast, Path::kAvx2, Path::kPlain}) {
    const std::vector<float> got = RunAttention(c, bad, 1, path);
    int nans = 0;
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t i = 0; i < c.q_len; ++i) {
        for (int64_t h = 0; h < c.q_heads; ++h) {
          const bool fallback = (b == 0 && h == 1) || (b == 1 && h == 0);
          for (int64_t e = 0; e < c.v_head; ++e) {
            const int64_t at = ((b * c.q_len + i) * c.q_heads + h) * c.v_head + e;
            const float want = fallback ? f32[at] : int8[at];
            nans += std::isnan(got[at]) ? 1 : 0;
            ASSERT_EQ(std::memcmp(&got[at], &want, sizeof(float)), 0)
                << "batch " << b << " row " << i << " head " << h << " column " << e;
          }
        }
      }
    }
    EXPECT_GT(nans, 0);  // the NaN query row propagates, as in fp32
  }
}

TEST(AttentionInt8Test, TinyRowsQuantizeToZeroOnBothPaths) {
  // A Q row and a V column of magnitude 1e-37, under 127 / FLT_MAX: their inverse step would be
  // infinite; they quantize to 0 (as a row of zeros does), the same on both paths, finite.
  const Case c = {1, 4, 20, 1, 1, 20, 16, {}};
  Data d = MakeData(c, 600);
  for (int64_t e = 0; e < c.head; ++e) d.q[2 * c.head + e] = (e % 2 ? 1e-37f : -1e-37f);
  for (int64_t j = 0; j < c.kv_len; ++j) d.v[j * c.v_head + 3] = 1e-38f * static_cast<float>(j % 3);
  const std::vector<float> plain = RunAttention(c, d, 1, Path::kPlain);
  for (float x : plain) ASSERT_TRUE(std::isfinite(x));
  for (int64_t i = 0; i < c.q_len; ++i) EXPECT_EQ(plain[i * c.v_head + 3], 0.0f) << i;
  EXPECT_TRUE(SameBits(RunAttention(c, d, 1, Path::kFast), plain));
  EXPECT_TRUE(SameBits(RunAttention(c, d, 1, Path::kAvx2), plain));
}

TEST(AttentionInt8Test, RowsOfMoreThan512KeysRunInFp32) {
  // 8-bit probabilities would drop too much of a long row's mass: past 512 keys the fp32 kernel
  // runs (its bits); at 512 the int8 one does.
  for (int64_t kv : {512, 513}) {
    SCOPED_TRACE(kv);
    const Case c = {1, 3, kv, 2, 2, 8, 8, {1, 1, 1, kv}};
    const Data d = MakeData(c, 700);
    const std::vector<float> f32 = RunAttention(c, d, 1, Path::kF32);
    for (Path path : {Path::kFast, Path::kAvx2, Path::kPlain}) {
      EXPECT_EQ(SameBits(RunAttention(c, d, 1, path), f32), kv > 512);
    }
  }
}

TEST(AttentionInt8Test, FullyMaskedRowsAreNanAsInFp32) {
  // -inf on every key of batch 0 (softmax of nothing: NaN in fp32); batch 1 keeps finite rows.
  Case c = {2, 3, 5, 1, 1, 4, 4, {2, 1, 1, 5}};
  Data d = MakeData(c, 500);
  for (int64_t j = 0; j < 5; ++j) {
    d.mask[j] = -std::numeric_limits<float>::infinity();
    d.mask[5 + j] = 0.0f;
  }
  for (Path path : {Path::kFast, Path::kAvx2, Path::kPlain, Path::kF32}) {
    const std::vector<float> y = RunAttention(c, d, 1, path);
    for (int64_t e = 0; e < 12; ++e) EXPECT_TRUE(std::isnan(y[e])) << e;
    for (int64_t e = 12; e < 24; ++e) EXPECT_TRUE(std::isfinite(y[e])) << e;
  }
}

}  // namespace
}  // namespace qcc::cpu
